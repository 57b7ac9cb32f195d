import type { TableClient } from '@azure/data-tables';
import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import { toDomainError } from 'azure-functions-idempotency/table';
import { withDeadline } from 'azure-functions-idempotency';
// Internal: the reconciler and the shard check query the Table store's marker rows directly (partitions, marker kind, row decoding: the store's row layout).
import { allPartitions, MARKER_KIND, toNumber, toRecord } from 'azure-functions-idempotency/internal';

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

/** One partition's sample of a consumer's live markers: their keys and statuses, and the requests it took. */
export interface MarkerSample {
  readonly markers: ReadonlyArray<{ readonly key: string; readonly status: string }>;
  readonly requests: number;
}

/**
 * The first page (at most `perPartition`) of `consumer`'s markers still in their retention at `nowMs`, partition by
 * partition (a bounded read: one request a partition, at most 3 when Azure answers empty pages with a continuation).
 * The shard check's read (src/payments/shardOwnership.ts). A missing table holds nothing.
 * @throws StoreUnavailableError, StoreRequestError
 */
export async function* liveMarkerSample(
  client: TableClient,
  options: { consumer: string; partitionCount: number; nowMs: number; perPartition: number; callTimeoutMs: number },
): AsyncGenerator<MarkerSample> {
  for (const partitionKey of allPartitions(options.partitionCount)) {
    const filter =
      `PartitionKey eq '${partitionKey}' and kind eq '${MARKER_KIND}' and consumer eq '${options.consumer.replace(/'/g, "''")}'` +
      ` and retentionExpiresAtMs gt ${Math.trunc(options.nowMs)}L`;
    const markers: Array<{ key: string; status: string }> = [];
    let continuationToken: string | undefined;
    let requests = 0;
    while (requests < 3) {
      requests++;
      const rows = await withDeadline(options.callTimeoutMs, 'liveMarkerSample', 'read', async (abortSignal) => {
        try {
          const pages = client
            .listEntities<Record<string, unknown>>({ queryOptions: { filter, select: ['idempotencyKey', 'status', 'retentionExpiresAtMs'] }, abortSignal })
            .byPage({ maxPageSize: options.perPartition, continuationToken });
          const next = await pages.next();
          return next.done ? Object.assign([], { continuationToken: undefined }) : next.value;
        } catch (error) {
          if ((error as { statusCode?: number }).statusCode === 404) return Object.assign([], { continuationToken: undefined }); // no table: nothing
          throw toDomainError(error, 'liveMarkerSample', 'read');
        }
      });
      for (const row of rows)
        if (toNumber(row.retentionExpiresAtMs) > options.nowMs) markers.push({ key: String(row.idempotencyKey), status: String(row.status) });
      continuationToken = rows.continuationToken;
      if (rows.length > 0 || !continuationToken) break;
    }
    yield { markers, requests };
  }
}
