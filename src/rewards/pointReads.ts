import type { TableClient } from '@azure/data-tables';
import { withDeadline } from 'azure-functions-idempotency';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/table';

/** Point reads in flight at once for one call (each its own request; the SDK's agent pools the sockets). */
const CONCURRENT_READS = 16;

/**
 * Reads rows `rowKeys` of one partition by point reads (`GET /table(PartitionKey='p',RowKey='r')`), each under its
 * own deadline: what the service reads is one row per request, whatever the partition holds. Never
 * `PartitionKey eq 'p' and (RowKey eq 'a' or RowKey eq 'b')`: the Table service runs an "or" of RowKeys as a scan of
 * the whole partition (Table design guide), so its cost would grow with the partition (an identity bucket holds
 * every identity of the retention window) until it passes the deadline on every batch.
 * @returns the rows found, by RowKey (a missing row, 404 `ResourceNotFound`, is absent).
 * @throws StoreUnavailableError (a deadline, 5xx, 429) or StoreRequestError (403, 404 `TableNotFound`, 409
 *   `TableBeingDeleted`, other 4xx): no raw SDK error.
 */
export async function readRows<T extends object>(
  client: TableClient,
  partitionKey: string,
  rowKeys: readonly string[],
  timeoutMs: number,
  operation: string,
): Promise<Map<string, T & { etag: string }>> {
  const found = new Map<string, T & { etag: string }>();
  let next = 0;
  const worker = async () => {
    while (next < rowKeys.length) {
      const rowKey = rowKeys[next++];
      try {
        const row = await withDeadline(timeoutMs, operation, 'read', (abortSignal) => client.getEntity<T>(partitionKey, rowKey, { abortSignal }));
        found.set(rowKey, row);
      } catch (error) {
        // Throws unless an answer about the row; of those only 404 ResourceNotFound (not there) is one a read can get.
        if (classifyStoreError(error, operation, 'read') !== 'notFound') throw toDomainError(error, operation, 'read');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT_READS, rowKeys.length) }, worker));
  return found;
}
