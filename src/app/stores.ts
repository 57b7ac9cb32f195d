import type { Container } from '@azure/cosmos';
import type { TableClient } from '@azure/data-tables';
import type { Settings } from '../config/settings';
import type { Clock, IdempotencyStore, ReopenableStore, IdempotencyRecord } from 'azure-functions-idempotency';
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import { CosmosIdempotencyStore } from 'azure-functions-idempotency/cosmos';
import { retentionMsOf } from '../lifecycle/retention';
import { ParkingStore } from '../messaging/ParkingStore';
import type { Telemetry } from '../telemetry/Telemetry';
import { cosmosIdempotencyContainer } from './cosmosClient';
import { reopenableByRetry } from './paymentRetry';
import { createTableClient } from './tableClient';

/**
 * What a caller may put in place of what the settings give: the Functions app passes none; the local
 * rigs (tools/local) pass their own table clients, clock, workflow, telemetry and short leases.
 */
export interface WiringOverrides {
  /** A client of table `tableName`; default {@link createTableClient} from the settings. */
  readonly tableClient?: (tableName: string) => TableClient;
  readonly clock?: Clock;
  readonly telemetry?: Telemetry;
  /** Lease in milliseconds; default `IDEMPOTENCY_LEASE_SECONDS` (whole seconds). */
  readonly leaseMs?: number;
  /** Retention in milliseconds; default `IDEMPOTENCY_RETENTION_DAYS`. */
  readonly retentionMs?: number;
  /** With `IDEMPOTENCY_STORE=cosmos`: the container of the Cosmos store; default {@link cosmosIdempotencyContainer} from the settings. */
  readonly idempotencyContainer?: Container;
}

/** The table client factory the overrides name, or the settings' one. */
export function tableClientsOf(settings: Settings, overrides: WiringOverrides = {}): (tableName: string) => TableClient {
  return overrides.tableClient ?? ((tableName) => createTableClient(settings, {}, tableName));
}

/** The lease the settings (or the overrides) give, in milliseconds. */
export function leaseMsOf(settings: Settings, overrides: WiringOverrides = {}): number {
  return overrides.leaseMs ?? settings.IDEMPOTENCY_LEASE_SECONDS * 1000;
}

/** What the completed-key cache of every store built here may hold: not a record the operator's retry may reopen. */
export const cacheableRecord = (record: IdempotencyRecord): boolean => !reopenableByRetry(record);

/** The dedup store as the settings describe it (table `IDEMPOTENCY_TABLE_NAME`). */
export function storeFromSettings(settings: Settings, overrides: WiringOverrides = {}): TableIdempotencyStore {
  return new TableIdempotencyStore(tableClientsOf(settings, overrides)(settings.IDEMPOTENCY_TABLE_NAME), {
    partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
    leaseMs: leaseMsOf(settings, overrides),
    retentionMs: overrides.retentionMs ?? retentionMsOf(settings),
    cacheSize: settings.IDEMPOTENCY_CACHE_SIZE,
    cacheable: cacheableRecord,
    callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
    clock: overrides.clock,
  });
}

/**
 * The payments consumer's dedup store as `IDEMPOTENCY_STORE` says: `table` -> `tableStore` (the one
 * {@link storeFromSettings} built), `cosmos` -> a {@link CosmosIdempotencyStore} on container
 * `COSMOS_IDEMPOTENCY_CONTAINER` with the same lease, retention, cache and deadline. Sends nothing. Either
 * store is a {@link ReopenableStore}: the operator's payments retry works on both.
 * @throws ConfigurationError when `IDEMPOTENCY_STORE=cosmos` and `COSMOS_ENDPOINT` is not set.
 */
export function consumerStoreFromSettings(settings: Settings, overrides: WiringOverrides, tableStore: TableIdempotencyStore): ReopenableStore {
  if (settings.IDEMPOTENCY_STORE !== 'cosmos') return tableStore;
  return new CosmosIdempotencyStore(overrides.idempotencyContainer ?? cosmosIdempotencyContainer(settings), {
    leaseMs: leaseMsOf(settings, overrides),
    retentionMs: overrides.retentionMs ?? retentionMsOf(settings),
    cacheSize: settings.IDEMPOTENCY_CACHE_SIZE,
    cacheable: cacheableRecord,
    callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
    clock: overrides.clock,
  });
}

/**
 * A store that sends each call to `routed` when its key's consumer is one of `consumers`, else to `others`:
 * for readers of records kept in two stores (the payment status reads the payments consumer's records and the
 * HTTP API's `accepted` records). `leaseMs` is `others`'.
 */
export function routedByConsumer(consumers: ReadonlySet<string>, routed: IdempotencyStore, others: IdempotencyStore): IdempotencyStore {
  const pick = (consumer: string) => (consumers.has(consumer) ? routed : others);
  return {
    leaseMs: others.leaseMs,
    claim: (key, digest, options) => pick(key.consumer).claim(key, digest, options),
    commit: (key, digest, result, effects) => pick(key.consumer).commit(key, digest, result, effects),
    complete: (claim, result, effects, options) => pick(claim.key.consumer).complete(claim, result, effects, options),
    release: (claim, reason) => pick(claim.key.consumer).release(claim, reason),
    renewLease: (claim, leaseMs) => pick(claim.key.consumer).renewLease(claim, leaseMs),
    get: (key) => pick(key.consumer).get(key),
  };
}

/** The parking store of both consumers (table `PARKED_TABLE_NAME`). */
export function parkingFromSettings(settings: Settings, overrides: WiringOverrides = {}): ParkingStore {
  return new ParkingStore(tableClientsOf(settings, overrides)(settings.PARKED_TABLE_NAME), overrides.clock, {
    callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
  });
}
