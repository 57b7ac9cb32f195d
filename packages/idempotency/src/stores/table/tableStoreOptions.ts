import { requireOptionsObject } from '../../protocol/options';
import { resolveStoreOptions, type CommonStoreOptions, type ResolvedStoreOptions } from '../../protocol/storeOptions';
import { DEFAULT_PARTITION_COUNT, validatePartitionCount } from './partitions';

/** The Table store's options: those every store takes, and how many partitions its records spread over. */
export interface TableIdempotencyStoreOptions extends CommonStoreOptions {
  /** Partitions the records spread over; fixed for a table's lifetime. Default 16. */
  readonly partitionCount?: number;
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
