import type { Clock } from '../../protocol/clock';
import type { IdempotencyRecord } from '../../protocol/record';
import { requireOptionsObject } from '../../protocol/options';
import { resolveStoreOptions, type ResolvedStoreOptions } from '../../protocol/storeOptions';
import { DEFAULT_PARTITION_COUNT, validatePartitionCount } from './partitions';

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
export interface ResolvedTableStoreOptions extends ResolvedStoreOptions {
  readonly partitionCount: number;
}

/**
 * Defaults and bounds of {@link TableIdempotencyStoreOptions}: `partitionCount` (checked first), then the options
 * every store takes (`resolveStoreOptions`, docs/DESIGN.md, "Records and leases").
 * @throws ConfigurationError naming the first option out of bounds.
 */
export function resolveTableStoreOptions(options: TableIdempotencyStoreOptions): ResolvedTableStoreOptions {
  const what = 'TableIdempotencyStore options';
  requireOptionsObject(options, what);
  const partitionCount = validatePartitionCount(options.partitionCount ?? DEFAULT_PARTITION_COUNT);
  return { partitionCount, ...resolveStoreOptions(options, what) };
}
