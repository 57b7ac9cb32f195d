import type { TableClient } from '@azure/data-tables';
import { LOCAL_ROWS_PROPERTY, MARKER_KIND, parseLocalRows } from '../../../protocol/localRows';
import type { RecordStatus } from '../../../protocol/record';
import { toDomainError } from '../storeErrors';
import type { VersionedRow } from './conditionalBatchDelete';

/** The expiry sweep's reads: which markers it selects, and how it reads them page by page. */

/** Most entities the Table service returns in one query page. */
export const MAX_PAGE_SIZE = 1000;
/** Columns the sweep reads: enough to re-check the expiry rule, to delete by version, and the local rows to delete with it. */
const SWEEP_COLUMNS = ['PartitionKey', 'RowKey', 'status', 'leaseExpiresAtMs', 'retentionExpiresAtMs', LOCAL_ROWS_PROPERTY];

/** A marker as the sweep reads it. */
export interface SweepRow extends VersionedRow {
  readonly status: RecordStatus;
  readonly leaseExpiresAtMs: number;
  readonly retentionExpiresAtMs: number;
  /** Names of the record's local rows, deleted with it. */
  readonly localRows: readonly string[];
}

/** What a run has done so far (see `SweepReport`). */
export interface SweepCounts {
  scanned: number;
  deleted: number;
  deletedLocalRows: number;
  skippedLeased: number;
  skippedChanged: number;
  alreadyDeleted: number;
  requests: number;
}

/** Markers of `partitionKey` past retention at `cutoffMs`, after `afterRowKey` if given (local rows and the checkpoint never match). */
export function expiredMarkersFilter(partitionKey: string, cutoffMs: number, afterRowKey: string | undefined): string {
  const filter = `PartitionKey eq '${partitionKey}' and kind eq '${MARKER_KIND}' and retentionExpiresAtMs le ${Math.trunc(cutoffMs)}L`;
  return afterRowKey === undefined ? filter : `${filter} and RowKey gt '${odataString(afterRowKey)}'`;
}

/** The markers in the RowKey range of `rows` (one partition, sorted), whatever their retention. */
export function markerRangeFilter(rows: readonly SweepRow[]): string {
  const first = rows[0];
  const last = rows[rows.length - 1];
  return (
    `PartitionKey eq '${first.partitionKey}' and RowKey ge '${odataString(first.rowKey)}' and RowKey le '${odataString(last.rowKey)}'` +
    ` and kind eq '${MARKER_KIND}'`
  );
}

/** Rows matching `filter`, one query page at a time (each page is one request, counted). @throws StoreUnavailableError, StoreRequestError */
export async function* queryMarkers(client: TableClient, filter: string, pageSize: number, counts: SweepCounts): AsyncGenerator<SweepRow[]> {
  const pages = client.listEntities<Record<string, unknown>>({ queryOptions: { filter, select: SWEEP_COLUMNS } }).byPage({ maxPageSize: pageSize });
  for (;;) {
    counts.requests++;
    let result: IteratorResult<Array<Record<string, unknown> & { etag?: string; continuationToken?: string }>>;
    try {
      result = await pages.next();
    } catch (error) {
      throw toDomainError(error, 'expirySweep.query');
    }
    if (result.done) return;
    const page = result.value as unknown as Array<Record<string, unknown>> & { continuationToken?: string };
    yield page.map(toSweepRow);
    if (!page.continuationToken) return;
  }
}

function toSweepRow(entity: Record<string, unknown>): SweepRow {
  return {
    partitionKey: String(entity.partitionKey),
    rowKey: String(entity.rowKey),
    etag: String(entity.etag),
    status: entity.status as RecordStatus,
    leaseExpiresAtMs: Number(entity.leaseExpiresAtMs ?? 0),
    retentionExpiresAtMs: Number(entity.retentionExpiresAtMs),
    localRows: parseLocalRows(entity[LOCAL_ROWS_PROPERTY]),
  };
}

/** A string literal for an OData filter: single quotes doubled. */
function odataString(value: string): string {
  return value.replace(/'/g, "''");
}
