import { ConfigurationError } from '../../protocol/errors';
import type { IdempotencyKey } from '../../protocol/keys';
import { scopedKeyHash } from '../../protocol/recordId';

/** The Table store's partition layout (a Table concern: the other stores use only the record id, `scopedKeyHash`). */

/** Default number of partitions the records spread over; see docs/DESIGN.md, "Partition layout". */
export const DEFAULT_PARTITION_COUNT = 16;
/** Highest partition count accepted (3 hex digits). */
export const MAX_PARTITION_COUNT = 4096;

/** Where a key's record lives in the table. */
export interface TableAddress {
  readonly partitionKey: string;
  readonly rowKey: string;
}

/**
 * Maps any scoped key (any characters, any length up to the key limit) to a valid PartitionKey /
 * RowKey pair, deterministically:
 *
 * - RowKey = the record id every store uses ({@link scopedKeyHash}: SHA-256 hex of the scoped key).
 * - PartitionKey = `p` + the hash's leading bits modulo `partitionCount`, as 3 hex digits, so
 *   load spreads evenly across `partitionCount` partitions and each can be swept on its own.
 *
 * `partitionCount` is fixed for a table's lifetime: changing it moves every key's address.
 * @throws InvalidKeyError for a key the helpers of `keys.ts` would not build (see `assertValidKey`).
 */
export function tableAddress(key: IdempotencyKey, partitionCount: number = DEFAULT_PARTITION_COUNT): TableAddress {
  const rowKey = scopedKeyHash(key);
  return { partitionKey: partitionName(Number.parseInt(rowKey.slice(0, 8), 16) % partitionCount), rowKey };
}

/** The PartitionKey of partition number `index` (0-based). */
export function partitionName(index: number): string {
  return `p${index.toString(16).padStart(3, '0')}`;
}

/** All PartitionKeys a table with `partitionCount` partitions uses, in order. */
export function allPartitions(partitionCount: number): string[] {
  validatePartitionCount(partitionCount);
  return Array.from({ length: partitionCount }, (_, i) => partitionName(i));
}

/** @throws ConfigurationError unless 1 <= partitionCount <= MAX_PARTITION_COUNT (an integer). */
export function validatePartitionCount(partitionCount: number): number {
  if (!Number.isInteger(partitionCount) || partitionCount < 1 || partitionCount > MAX_PARTITION_COUNT) {
    throw new ConfigurationError(`partition count must be an integer from 1 to ${MAX_PARTITION_COUNT}, got ${partitionCount}`);
  }
  return partitionCount;
}
