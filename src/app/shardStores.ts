import type { TableClient } from '@azure/data-tables';
import { ConfigurationError } from 'azure-functions-idempotency';
import type { Settings } from '../config/settings';
import { shardLayoutOf } from '../payments/shards';
import { routeOf, shardTableEndpointsOf, type OwnerOf, type ShardRoute } from '../payments/shardTables';
import { tableClientsOf, type WiringOverrides } from './stores';
import { createTableClient } from './tableClient';

/** How to reach another shard's account: its connection string (local Azurite), or its endpoint with the identity (Azure). */
export type ShardTableConnection = { readonly connectionString: string } | { readonly endpoint: string };

/**
 * The connection to the account at `endpoint` as these settings reach their own: with the identity when the app uses
 * `IDEMPOTENCY_TABLE_ENDPOINT` (Azure); locally, this app's connection string with its `TableEndpoint` replaced (every
 * local shard's Azurite has the same development account and key).
 * @throws ConfigurationError when the local connection string names no account and key (`UseDevelopmentStorage=true`)
 */
export function shardTableConnection(ownConnectionString: string | undefined, endpoint: string): ShardTableConnection {
  if (!ownConnectionString) return { endpoint };
  const parts = ownConnectionString
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  const account = parts.find((part) => /^AccountName=/i.test(part));
  const key = parts.find((part) => /^AccountKey=/i.test(part));
  if (!account || !key)
    throw new ConfigurationError(
      'IDEMPOTENCY_TABLE_CONNECTION_STRING must name AccountName and AccountKey to reach another shard at its PAYMENT_SHARD_TABLE_ENDPOINTS entry',
    );
  const protocol = new URL(endpoint).protocol.replace(':', '');
  return { connectionString: `DefaultEndpointsProtocol=${protocol};${account};${key};TableEndpoint=${endpoint};` };
}

/** The payments' shards as these settings see them: where a payment's records are, and each shard's tables. */
export interface PaymentShards {
  /** This app's shard (`PAYMENT_SHARD_INDEX`; 0 with one shard). */
  readonly index: number;
  /** Where `paymentId`'s records are (see {@link ShardRoute}). */
  route(paymentId: string): ShardRoute;
  /** A client of table `tableName` in shard `shard`'s account (this app's own for its own shard). */
  tables(shard: number): (tableName: string) => TableClient;
  /**
   * `build` applied to the tables of `paymentId`'s owner, once per shard (a store keeps its cache and deadline): the
   * owner's thing, or the misdirected route when this app has no map to reach it.
   */
  ownerOf<T>(build: (tables: (tableName: string) => TableClient, shard: number) => T): OwnerOf<T>;
}

/**
 * The shards from the settings (`PAYMENT_SHARD_COUNT`, `PAYMENT_SHARD_INDEX`, `PAYMENT_SHARD_TABLE_ENDPOINTS`). With one
 * shard every payment is `here` and nothing changes. Creating it sends nothing.
 * @throws ConfigurationError on a layout or map `loadSettings` would refuse, or a local connection string that names no
 *   account key to reach the other shards with
 */
export function paymentShardsOf(settings: Settings, overrides: WiringOverrides = {}): PaymentShards {
  const layout = shardLayoutOf(settings);
  const endpoints = shardTableEndpointsOf(settings.PAYMENT_SHARD_TABLE_ENDPOINTS, layout.count);
  const own = tableClientsOf(settings, overrides);
  // Every other shard's connection, worked out now: a local connection string that cannot reach them fails here, at start.
  const connections = (endpoints ?? []).map((endpoint, shard) =>
    shard === layout.index ? undefined : shardTableConnection(settings.IDEMPOTENCY_TABLE_CONNECTION_STRING, endpoint),
  );
  const tables = (shard: number): ((tableName: string) => TableClient) => {
    if (shard === layout.index) return own;
    const connection = connections[shard];
    if (!connection)
      throw new ConfigurationError(`shard ${shard} of ${layout.count} is not reachable from shard ${layout.index}: set PAYMENT_SHARD_TABLE_ENDPOINTS`);
    const reach = {
      ...settings,
      IDEMPOTENCY_TABLE_CONNECTION_STRING: 'connectionString' in connection ? connection.connectionString : undefined,
      IDEMPOTENCY_TABLE_ENDPOINT: 'endpoint' in connection ? connection.endpoint : undefined,
    };
    return (tableName) => createTableClient(reach, {}, tableName);
  };
  return {
    index: layout.index,
    route: (paymentId) => routeOf(paymentId, layout, endpoints),
    tables,
    ownerOf<T>(build: (tables: (tableName: string) => TableClient, shard: number) => T): OwnerOf<T> {
      const built = new Map<number, T>();
      return (paymentId) => {
        const route = routeOf(paymentId, layout, endpoints);
        if (route.kind === 'misdirected') return route;
        let thing = built.get(route.shard);
        if (thing === undefined) {
          thing = build(tables(route.shard), route.shard);
          built.set(route.shard, thing);
        }
        return thing;
      };
    },
  };
}
