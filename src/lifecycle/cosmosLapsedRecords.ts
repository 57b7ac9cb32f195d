import type { Container } from '@azure/cosmos';
import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
// Internal: the reconciler queries the Cosmos store's documents directly (their layout and error mapping are the store's).
import { markerToRecord, cosmosStoreError, MARKER_KIND } from 'azure-functions-idempotency/internal';

/**
 * The reconciler's read of the Cosmos DB store (`IDEMPOTENCY_STORE=cosmos`; the Table store's is `lapsedRecords.ts`):
 * `consumer`'s markers still `IN_PROGRESS` whose lease lapsed at or before a bound. One parameterised cross-partition
 * query, page by page (the store keeps one logical partition per key, so there is no partition to walk); nothing is
 * written. The caller stops when its budget is spent: the next page is read only when asked.
 * @throws StoreUnavailableError, StoreRequestError
 */
export async function* cosmosLapsedInProgressRecords(
  container: Container,
  options: { consumer: string; lapsedBeforeMs: number; pageSize?: number },
): AsyncGenerator<IdempotencyRecord> {
  const query = {
    query: 'SELECT * FROM c WHERE c.kind = @kind AND c.consumer = @consumer AND c.status = @status AND c.leaseExpiresAtMs <= @lapsedBeforeMs',
    parameters: [
      { name: '@kind', value: MARKER_KIND },
      { name: '@consumer', value: options.consumer },
      { name: '@status', value: RecordStatus.InProgress },
      { name: '@lapsedBeforeMs', value: Math.trunc(options.lapsedBeforeMs) },
    ],
  };
  const pages = container.items.query<Record<string, unknown>>(query, { maxItemCount: options.pageSize ?? 100 });
  while (pages.hasMoreResults()) {
    let resources: Array<Record<string, unknown>>;
    try {
      ({ resources } = await pages.fetchNext());
    } catch (error) {
      throw cosmosStoreError(error, 'reconcile.query', 'read');
    }
    for (const doc of resources ?? []) yield markerToRecord(doc, typeof doc._etag === 'string' ? doc._etag : '');
  }
}
