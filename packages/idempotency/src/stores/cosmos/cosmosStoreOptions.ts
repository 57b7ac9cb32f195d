import type { Clock } from '../../protocol/clock';
import type { CosmosRequestCharge } from './CosmosMarkers';
import { ConfigurationError } from '../../protocol/errors';
import type { IdempotencyRecord } from '../../protocol/record';
import { requireOptionsObject } from '../../protocol/options';
import { resolveStoreOptions, type ResolvedStoreOptions } from '../../protocol/storeOptions';

export interface CosmosIdempotencyStoreOptions {
  /** Default lease of a claim. Default 5 minutes. */
  readonly leaseMs?: number;
  /** How long a record is kept after its last write (its documents' TTL follows it). Required: derive it from the broker. */
  readonly retentionMs: number;
  /** Largest stored result, in UTF-8 bytes of its JSON. Default and ceiling 32 KiB (the Table store's: one contract). */
  readonly maxResultBytes?: number;
  /** Entries of the in-process cache of completed keys; 0 (default) turns it off. */
  readonly cacheSize?: number;
  /** Which completed records the cache may hold (the Table store's option: false for a result the consumer may reopen). */
  readonly cacheable?: (record: IdempotencyRecord) => boolean;
  /** Deadline of each store call (SDK retries included), then `StoreUnavailableError`. Default 5 s. */
  readonly callTimeoutMs?: number;
  readonly clock?: Clock;
  /** Told the request charge (RU) of every answer, from its `x-ms-request-charge` header. Must not throw (ignored if it does). */
  readonly onRequestCharge?: (charge: CosmosRequestCharge) => void;
}

/** The options of a Cosmos store, defaulted and checked. */
export type ResolvedCosmosStoreOptions = ResolvedStoreOptions;

/**
 * Defaults and bounds of {@link CosmosIdempotencyStoreOptions}: the options every store takes, as the Table store
 * checks them (`resolveStoreOptions`, docs/DESIGN.md, "Records and leases"), so settings that build one store build
 * the other.
 * @throws ConfigurationError naming the first option out of bounds.
 */
export function resolveCosmosStoreOptions(options: CosmosIdempotencyStoreOptions): ResolvedCosmosStoreOptions {
  requireOptionsObject(options, 'CosmosIdempotencyStore options');
  if (options.onRequestCharge !== undefined && typeof options.onRequestCharge !== 'function')
    throw new ConfigurationError('onRequestCharge must be a function');
  return resolveStoreOptions(options, 'CosmosIdempotencyStore options');
}
