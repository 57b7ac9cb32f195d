import type { TableClient } from '@azure/data-tables';
import { IdempotencyError, StoreRequestError } from '../../../protocol/errors';
import { isExpired } from '../../../protocol/recordRules';
import { classifyStoreError } from '../storeErrors';
import { localRowKey } from '../tableRows';
import { deleteRowsIfUnchanged, type VersionedRow } from './conditionalBatchDelete';
import { markerRangeFilter, queryMarkers, type SweepCounts, type SweepRow } from './sweepQuery';

/** The expiry sweep's deletes: ETag-conditional transactions, re-read and retried, then one by one. */

/** Conditional batch retries of one chunk before falling back to single deletes. */
const BATCH_ROUNDS = 3;
const SINGLE_DELETE_CONCURRENCY = 8;

/**
 * Deletes `chunk` (expired as read) in one conditional transaction. When it fails on a 404/412,
 * re-reads the chunk's RowKey range, drops rows gone (already deleted) or no longer expired
 * (changed), and retries with the current versions; after a few rounds deletes one by one.
 */
export async function deleteExpired(client: TableClient, chunk: readonly SweepRow[], cutoffMs: number, pageSize: number, counts: SweepCounts): Promise<void> {
  let pending = chunk;
  for (let round = 0; round < BATCH_ROUNDS && pending.length > 0; round++) {
    if (round > 0) pending = await reread(client, pending, cutoffMs, pageSize, counts);
    if (pending.length === 0) return;
    counts.requests++;
    try {
      await deleteRowsIfUnchanged(client, withLocalRows(pending));
      counts.deleted += pending.length;
      counts.deletedLocalRows += pending.reduce((sum, row) => sum + row.localRows.length, 0);
      return;
    } catch (error) {
      if (error instanceof IdempotencyError) throw error;
      const conflict = classifyStoreError(error, 'expirySweep.delete');
      if (conflict === 'exists') throw new StoreRequestError('unexpected 409 answer to a delete transaction', 'expirySweep.delete', 409, error);
    }
  }
  if (pending.length > 0) await deleteOneByOne(client, await reread(client, pending, cutoffMs, pageSize, counts), counts);
}

/** The rows of `rows` as they are now, still expired; counts the others as gone or changed. */
async function reread(client: TableClient, rows: readonly SweepRow[], cutoffMs: number, pageSize: number, counts: SweepCounts): Promise<SweepRow[]> {
  const filter = markerRangeFilter(rows);
  const wanted = new Set(rows.map((row) => row.rowKey));
  const current = new Map<string, SweepRow>();
  for await (const page of queryMarkers(client, filter, pageSize, counts)) {
    for (const row of page) if (wanted.has(row.rowKey)) current.set(row.rowKey, row);
  }
  const still: SweepRow[] = [];
  for (const row of rows) {
    const now = current.get(row.rowKey);
    if (!now) counts.alreadyDeleted++;
    else if (!isExpired(now, cutoffMs)) counts.skippedChanged++;
    else still.push(now);
  }
  return still;
}

/**
 * Last resort: one conditional delete per record (with its local rows, one transaction);
 * 404 counts as already deleted, 412 as changed.
 */
async function deleteOneByOne(client: TableClient, rows: readonly SweepRow[], counts: SweepCounts): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < rows.length) {
      const row = rows[next++];
      counts.requests++;
      try {
        if (row.localRows.length === 0) await client.deleteEntity(row.partitionKey, row.rowKey, { etag: row.etag });
        else await deleteRowsIfUnchanged(client, withLocalRows([row]));
        counts.deleted++;
        counts.deletedLocalRows += row.localRows.length;
      } catch (error) {
        const conflict = classifyStoreError(error, 'expirySweep.delete');
        if (conflict === 'notFound') counts.alreadyDeleted++;
        else counts.skippedChanged++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(SINGLE_DELETE_CONCURRENCY, rows.length) }, worker));
}

/** Actions a record's delete takes in a transaction: the marker and its local rows. */
export function actionsOf(row: SweepRow): number {
  return 1 + row.localRows.length;
}

/**
 * The records and their local rows, as rows to delete. A local row changes only in a transaction
 * that also changes its marker, so the marker's ETag guards the whole group: local rows go with
 * `If-Match: *`.
 */
function withLocalRows(rows: readonly SweepRow[]): VersionedRow[] {
  return rows.flatMap((row) => [row, ...row.localRows.map((name) => ({ partitionKey: row.partitionKey, rowKey: localRowKey(row.rowKey, name), etag: '*' }))]);
}
