import { ConfigurationError } from 'azure-functions-idempotency';
import { shardOf, type ShardLayout } from './shards';

/**
 * The shard map of the operator paths (issue 52 item 2, docs/DESIGN.md "Past one task hub"): `PAYMENT_SHARD_TABLE_ENDPOINTS`,
 * the table service endpoint of every shard's storage account, in shard order, comma-separated
 * (`https://st<token>.table.core.windows.net/,https://st<token>s1.table.core.windows.net/,...`). A payment's records
 * (the consumer's record, the API's `accepted` marker, the provider's Payment row) live in its owner's account; with the
 * map any shard reads and writes them there (the one identity every shard runs as holds Storage Table Data Contributor
 * on every shard's account). Without it a shard reaches only its own account.
 */

/** Hosts a plain-http endpoint may name: the local emulator on this machine (Azurite). */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * What is wrong with `value` as the map of `count` shards, or undefined when it is right (or unset: no map). Each entry
 * is an absolute https URL, or http on a loopback host (Azurite); no query (a SAS would be a secret in an app setting:
 * the identity reaches the tables) and no user info; N entries, all different.
 */
export function shardTableEndpointsProblem(value: string | undefined, count: number): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length !== count) return `${entries.length} table endpoints for ${count} shards (PAYMENT_SHARD_COUNT): one per shard, in shard order`;
  for (const [shard, entry] of entries.entries()) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      return `shard ${shard}'s entry ${JSON.stringify(entry)} is not an absolute URL`;
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)))
      return `shard ${shard}'s entry ${entry} must be https (plain http only on a loopback host: the local emulator)`;
    if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '')
      return `shard ${shard}'s entry ${url.origin}${url.pathname} must carry no query, fragment or credentials (the identity reaches the tables)`;
  }
  const normalized = entries.map((entry) => entry.replace(/\/+$/, '').toLowerCase());
  if (new Set(normalized).size !== normalized.length) return 'two shards name the same table endpoint: each shard has its own storage account';
  return undefined;
}

/**
 * The map as a list (index = shard), or undefined when the setting is unset.
 * @throws ConfigurationError when {@link shardTableEndpointsProblem} finds a problem
 */
export function shardTableEndpointsOf(value: string | undefined, count: number): readonly string[] | undefined {
  const problem = shardTableEndpointsProblem(value, count);
  if (problem) throw new ConfigurationError(`PAYMENT_SHARD_TABLE_ENDPOINTS: ${problem}`);
  if (value === undefined || value.trim() === '') return undefined;
  return value.split(',').map((entry) => entry.trim());
}

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
