import type { TableClient } from '@azure/data-tables';
import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import { toDomainError } from 'azure-functions-idempotency/table';
// Internal: the reconciler queries the Table store's marker rows directly (partitions, marker kind, row decoding: the store's row layout).
import { allPartitions, MARKER_KIND, toRecord } from 'azure-functions-idempotency/internal';

/**
 * The reconciler's read of the Table store (docs/lifecycle.md "Reconciling runs that ended without their record"):
 * markers of one consumer still `IN_PROGRESS` whose lease lapsed at or before a bound. One filtered query per
 * partition, page by page; nothing is written.
 */

/** Query pages the reconciler asks for: the records found are few (a run's record normally completes in seconds). */
const PAGE_SIZE = 100;

/** The OData filter of `consumer`'s in-progress markers in `partitionKey` whose lease lapsed at or before `lapsedBeforeMs`. */
export function lapsedInProgressFilter(partitionKey: string, consumer: string, lapsedBeforeMs: number): string {
  return (
    `PartitionKey eq '${partitionKey}' and kind eq '${MARKER_KIND}' and consumer eq '${consumer.replace(/'/g, "''")}'` +
    ` and status eq '${RecordStatus.InProgress}' and leaseExpiresAtMs le ${Math.trunc(lapsedBeforeMs)}L`
  );
}

/**
 * `consumer`'s records in progress whose lease lapsed at or before `lapsedBeforeMs`, partition by partition; the
 * caller stops when its budget is spent (the generator reads the next page only when asked).
 * @throws StoreUnavailableError, StoreRequestError
 */
export async function* lapsedInProgressRecords(
  client: TableClient,
  options: { consumer: string; partitionCount: number; lapsedBeforeMs: number; position?: ReconcilePosition },
): AsyncGenerator<IdempotencyRecord> {
  const partitions = allPartitions(options.partitionCount);
  const start = (options.position?.partition ?? 0) % partitions.length;
  for (let n = 0; n < partitions.length; n++) {
    const index = (start + n) % partitions.length;
    if (options.position) options.position.partition = index;
    const partitionKey = partitions[index];
    const filter = lapsedInProgressFilter(partitionKey, options.consumer, options.lapsedBeforeMs);
    const pages = client.listEntities<Record<string, unknown>>({ queryOptions: { filter } }).byPage({ maxPageSize: PAGE_SIZE });
    for (;;) {
      let page: IteratorResult<Array<Record<string, unknown>>>;
      try {
        page = (await pages.next()) as IteratorResult<Array<Record<string, unknown>>>;
      } catch (error) {
        if ((error as { statusCode?: number }).statusCode === 404) return; // no table yet: nothing in progress
        throw toDomainError(error, 'reconcile.query');
      }
      if (page.done) break;
      for (const entity of page.value) yield toRecord(entity as Parameters<typeof toRecord>[0]);
    }
  }
  if (options.position) options.position.partition = 0;
}

/**
 * Where the reconciler's read stands: the partition it is in. A pass the budget stops leaves it there, and the next
 * pass starts from it (wrapping round), so a large backlog in the first partitions cannot starve the later ones.
 * Kept by the process (a new instance starts at partition 0).
 */
export interface ReconcilePosition {
  partition: number;
}
