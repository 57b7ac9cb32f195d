import { systemClock, type Clock } from './clock';
import { DEFAULT_STORE_TIMEOUT_MS } from './deadline';
import { ConfigurationError } from './errors';
import type { IdempotencyRecord } from './record';
import { integerOption, leaseMsOption, MAX_CACHE_SIZE, MAX_RETENTION_MS, MAX_STORE_TIMEOUT_MS, requireOptionsObject } from './options';

/** Hard ceiling on a stored result: a Table string property holds 64 KiB of UTF-16 (every store keeps it: one contract). */
export const MAX_RESULT_BYTES_LIMIT = 32 * 1024;

/**
 * The options every store takes (docs/DESIGN.md, "Records and leases"), so settings that build one store build
 * another. Each store's options extend them with its own (the Table store's `partitionCount`, Cosmos's
 * `onRequestCharge`); this is what the shared check below reads.
 */
export interface CommonStoreOptions {
  /** Default lease of a claim. Default 5 minutes. */
  readonly leaseMs?: number;
  /** How long a record is kept after its last write. Required: derive it from the broker (see retention). */
  readonly retentionMs: number;
  /** Largest stored result, in UTF-8 bytes of its JSON. Default and ceiling 32 KiB (every store's: one contract). */
  readonly maxResultBytes?: number;
  /** Entries of the in-process cache of completed keys; 0 (default) turns it off. */
  readonly cacheSize?: number;
  /**
   * Which completed records the cache may hold: false for a result the consumer may reopen later (the
   * payments operator's retry of a `failed` charge), so a duplicate always reads it from the store. Must not
   * throw (a throw counts as false). Default: every completed record.
   */
  readonly cacheable?: (record: IdempotencyRecord) => boolean;
  /** Deadline of each store call (SDK retries included), then `StoreUnavailableError`. Default 5 s. */
  readonly callTimeoutMs?: number;
  readonly clock?: Clock;
}

/** The {@link CommonStoreOptions} of a store, defaulted and checked. */
export interface ResolvedStoreOptions {
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResultBytes: number;
  readonly cacheSize: number;
  readonly cacheable: ((record: IdempotencyRecord) => boolean) | undefined;
  readonly callTimeoutMs: number;
  readonly clock: Clock;
}

/**
 * Defaults and bounds of {@link CommonStoreOptions}; `what` names the options in the error for a non-object.
 * @throws ConfigurationError naming the first option out of bounds.
 */
export function resolveStoreOptions(options: CommonStoreOptions, what: string): ResolvedStoreOptions {
  requireOptionsObject(options, what);
  const leaseMs = leaseMsOption(options.leaseMs ?? 5 * 60_000);
  const retentionMs = integerOption(options.retentionMs, 'retentionMs', 1, MAX_RETENTION_MS);
  const maxResultBytes = integerOption(options.maxResultBytes ?? MAX_RESULT_BYTES_LIMIT, 'maxResultBytes', 1, Number.MAX_SAFE_INTEGER);
  if (maxResultBytes > MAX_RESULT_BYTES_LIMIT) {
    throw new ConfigurationError(
      `maxResultBytes ${maxResultBytes} is above the limit every store keeps, ${MAX_RESULT_BYTES_LIMIT} (one Table string property: a result must fit every store)`,
    );
  }
  const callTimeoutMs = integerOption(options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS, 'callTimeoutMs', 1, MAX_STORE_TIMEOUT_MS);
  const clock = options.clock ?? systemClock;
  if (typeof clock?.nowMs !== 'function') throw new ConfigurationError('clock must have a nowMs() method');
  const cacheSize = integerOption(options.cacheSize ?? 0, 'cacheSize', 0, MAX_CACHE_SIZE);
  const cacheable = options.cacheable;
  if (cacheable !== undefined && typeof cacheable !== 'function') throw new ConfigurationError('cacheable must be a function');
  return { leaseMs, retentionMs, maxResultBytes, cacheSize, cacheable, callTimeoutMs, clock };
}

/** Longest release reason kept. */
export const MAX_REASON_LENGTH = 1024;
/** Claims whose write outcome stayed unknown, remembered per store (bounded). */
export const MAX_UNRESOLVED_CLAIMS = 1000;
