import type { TableClient } from '@azure/data-tables';
import { IdempotencyError, StoreRequestError } from '../../../protocol/errors';
import { classifyStoreError } from '../storeErrors';

/** Reserved PartitionKey of the sweep's own rows; never a record partition (those are `pXXX`). */
export const SWEEP_STATE_PARTITION = 'sweep-state';
/** `kind` of the checkpoint row (never `idempotency-marker`, so the sweep never selects it). */
export const SWEEP_CHECKPOINT_KIND = 'sweep-checkpoint';

/** Where the next sweep starts: everything before it, since the cycle began, has been swept. */
export interface SweepPosition {
  /** 0-based index of the partition to sweep next. */
  readonly partitionIndex: number;
  /** Rows of that partition up to and including this RowKey are done; undefined: none are. */
  readonly afterRowKey: string | undefined;
}

/** A position as read, with the checkpoint row's version (undefined: no row yet). */
export interface StoredSweepPosition extends SweepPosition {
  readonly etag: string | undefined;
}

/**
 * Reads the checkpoint row `name`; a missing row is the start of partition 0.
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function readSweepPosition(client: TableClient, name: string): Promise<StoredSweepPosition> {
  try {
    const row = await client.getEntity<Record<string, unknown>>(SWEEP_STATE_PARTITION, name);
    const index = Number(row.partitionIndex);
    const after = typeof row.afterRowKey === 'string' && row.afterRowKey !== '' ? row.afterRowKey : undefined;
    return { partitionIndex: Number.isInteger(index) && index >= 0 ? index : 0, afterRowKey: after, etag: row.etag };
  } catch (error) {
    if (error instanceof IdempotencyError) throw error;
    if (classifyStoreError(error, 'expirySweep.readCheckpoint') === 'notFound') return { partitionIndex: 0, afterRowKey: undefined, etag: undefined };
    throw new StoreRequestError('unexpected conflict answer to a checkpoint read', 'expirySweep.readCheckpoint', undefined, error);
  }
}

/**
 * Moves the checkpoint from the version that was read (`etag`) to `position`, only if no other
 * sweep moved it in between (insert-if-absent, or `If-Match`). So the checkpoint only ever moves
 * from a position P to a position Q by a sweep that finished everything from P up to Q: no
 * partition is skipped, whatever runs overlap.
 *
 * @returns false when another sweep moved it first (its position is kept).
 * @throws StoreUnavailableError / StoreRequestError
 */
export async function writeSweepPosition(
  client: TableClient,
  name: string,
  etag: string | undefined,
  position: SweepPosition,
  nowMs: number,
): Promise<boolean> {
  const entity = {
    partitionKey: SWEEP_STATE_PARTITION,
    rowKey: name,
    kind: SWEEP_CHECKPOINT_KIND,
    partitionIndex: position.partitionIndex,
    afterRowKey: position.afterRowKey ?? '',
    updatedAtMs: { value: String(Math.trunc(nowMs)), type: 'Int64' as const },
  };
  try {
    if (etag === undefined) await client.createEntity(entity);
    else await client.updateEntity(entity, 'Replace', { etag });
    return true;
  } catch (error) {
    if (error instanceof IdempotencyError) throw error;
    classifyStoreError(error, 'expirySweep.writeCheckpoint'); // throws unless 409 / 412 / 404
    return false;
  }
}
