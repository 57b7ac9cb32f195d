import { shardOf, type ShardLayout } from './shards';
export { shardTableEndpointsOf, shardTableEndpointsProblem } from '../config/shardTableEndpoints';

/**
 * The shard map of the operator paths (issue 52 item 2, docs/DESIGN.md "Past one task hub"): `PAYMENT_SHARD_TABLE_ENDPOINTS`,
 * the table service endpoint of every shard's storage account, in shard order, comma-separated
 * (`https://st<token>.table.core.windows.net/,https://st<token>s1.table.core.windows.net/,...`). A payment's records
 * (the consumer's record, the API's `accepted` marker, the provider's Payment row) live in its owner's account; with the
 * map any shard reads and writes them there (the one identity every shard runs as holds Storage Table Data Contributor
 * on every shard's account). Without it a shard reaches only its own account.
 */

/**
 * Where the records of a payment are, seen from shard `layout.index`:
 * - `here`: this shard owns it (always with one shard);
 * - `owner`: shard `shard` owns it, reached at its account's table endpoint;
 * - `misdirected`: shard `shard` owns it and this app has no map to reach it: answer so (HTTP 421), never from this
 *   shard's tables, which hold nothing of it (or, for a marker written before the map was set, not the truth).
 */
export type ShardRoute =
  | { readonly kind: 'here'; readonly shard: number }
  | { readonly kind: 'owner'; readonly shard: number; readonly endpoint: string }
  | { readonly kind: 'misdirected'; readonly shard: number; readonly count: number; readonly index: number };

/** The route of `paymentId` (see {@link ShardRoute}). */
export function routeOf(paymentId: string, layout: Pick<ShardLayout, 'count' | 'index'>, endpoints: readonly string[] | undefined): ShardRoute {
  const shard = shardOf(paymentId, layout.count);
  if (shard === layout.index) return { kind: 'here', shard };
  if (endpoints) return { kind: 'owner', shard, endpoint: endpoints[shard] };
  return { kind: 'misdirected', shard, count: layout.count, index: layout.index };
}

/** The sentence a refusal names the owner with: `payment X belongs to shard k of N, this is shard i`. */
export function misdirectedText(paymentId: string, route: Extract<ShardRoute, { kind: 'misdirected' }>): string {
  return `payment ${paymentId} belongs to shard ${route.shard} of ${route.count}, this is shard ${route.index} (no PAYMENT_SHARD_TABLE_ENDPOINTS to reach it)`;
}

/**
 * A thing of the owner shard of a payment (its store, its Payment-row table), or the misdirected route when this app
 * cannot reach the owner. What the HTTP endpoints take instead of one store when the app is sharded.
 */
export type OwnerOf<T> = (paymentId: string) => T | Extract<ShardRoute, { kind: 'misdirected' }>;

/** True when `value` is the misdirected route (not the owner's thing). */
export function isMisdirected<T>(value: T | ShardRoute): value is Extract<ShardRoute, { kind: 'misdirected' }> {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'misdirected';
}
