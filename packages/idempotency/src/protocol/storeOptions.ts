import { systemClock, type Clock } from './clock';
import { DEFAULT_STORE_TIMEOUT_MS } from './deadline';
import { ConfigurationError } from './errors';
import type { IdempotencyRecord } from './record';
import { integerOption, leaseMsOption, MAX_CACHE_SIZE, MAX_RETENTION_MS, MAX_STORE_TIMEOUT_MS, requireOptionsObject } from './options';
import { DEFAULT_PARTITION_COUNT, validatePartitionCount } from './address';

/** Hard ceiling on a stored result: a Table string property holds 64 KiB of UTF-16. */
export const MAX_RESULT_BYTES_LIMIT = 32 * 1024;

export interface TableIdempotencyStoreOptions {
  /** Partitions the records spread over; fixed for a table's lifetime. Default 16. */
  readonly partitionCount?: number;
  /** Default lease of a claim. Default 5 minutes. */
  readonly leaseMs?: number;
  /** How long a record is kept after its last write. Required: derive it from the broker (see retention). */
  readonly retentionMs: number;
  /** Largest stored result, in UTF-8 bytes of its JSON. Default and ceiling 32 KiB. */
  readonly maxResultBytes?: number;
  /** Entries of the in-process cache of completed keys; 0 (default) turns it off. */
  readonly cacheSize?: number;
  /**
   * Which completed records the cache may hold: false for a result the consumer may reopen later (the
   * payments operator's retry of a `failed` charge), so a duplicate always reads it from the table. Must not
   * throw (a throw counts as false). Default: every completed record.
   */
  readonly cacheable?: (record: IdempotencyRecord) => boolean;
  /** Deadline of each store call (SDK retries included), then `StoreUnavailableError`. Default 5 s. */
  readonly callTimeoutMs?: number;
  readonly clock?: Clock;
}

/** The options of a Table store, defaulted and checked. */
export interface ResolvedTableStoreOptions {
  readonly partitionCount: number;
  readonly leaseMs: number;
  readonly retentionMs: number;
  readonly maxResultBytes: number;
  readonly cacheSize: number;
  readonly cacheable: ((record: IdempotencyRecord) => boolean) | undefined;
  readonly callTimeoutMs: number;
  readonly clock: Clock;
}

/**
 * Defaults and bounds of {@link TableIdempotencyStoreOptions} (docs/DESIGN.md, "Records and leases").
 * @throws ConfigurationError naming the first option out of bounds.
 */
export function resolveTableStoreOptions(options: TableIdempotencyStoreOptions): ResolvedTableStoreOptions {
  requireOptionsObject(options, 'TableIdempotencyStore options');
  const partitionCount = validatePartitionCount(options.partitionCount ?? DEFAULT_PARTITION_COUNT);
  const leaseMs = leaseMsOption(options.leaseMs ?? 5 * 60_000);
  const retentionMs = integerOption(options.retentionMs, 'retentionMs', 1, MAX_RETENTION_MS);
  const maxResultBytes = integerOption(options.maxResultBytes ?? MAX_RESULT_BYTES_LIMIT, 'maxResultBytes', 1, Number.MAX_SAFE_INTEGER);
  if (maxResultBytes > MAX_RESULT_BYTES_LIMIT) {
    throw new ConfigurationError(`maxResultBytes ${maxResultBytes} is above the Table Storage limit of ${MAX_RESULT_BYTES_LIMIT}`);
  }
  const callTimeoutMs = integerOption(options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS, 'callTimeoutMs', 1, MAX_STORE_TIMEOUT_MS);
  const clock = options.clock ?? systemClock;
  if (typeof clock?.nowMs !== 'function') throw new ConfigurationError('clock must have a nowMs() method');
  const cacheSize = integerOption(options.cacheSize ?? 0, 'cacheSize', 0, MAX_CACHE_SIZE);
  const cacheable = options.cacheable;
  if (cacheable !== undefined && typeof cacheable !== 'function') throw new ConfigurationError('cacheable must be a function');
  return { partitionCount, leaseMs, retentionMs, maxResultBytes, cacheSize, cacheable, callTimeoutMs, clock };
}

/** Longest release reason kept. */
export const MAX_REASON_LENGTH = 1024;
/** Claims whose write outcome stayed unknown, remembered per store (bounded). */
export const MAX_UNRESOLVED_CLAIMS = 1000;
