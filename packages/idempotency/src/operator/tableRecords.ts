import type { TableClient } from '@azure/data-tables';
import { DEFAULT_STORE_TIMEOUT_MS, withDeadline } from '../protocol/deadline';
import { IdempotencyError } from '../protocol/errors';
import type { IdempotencyKey } from '../protocol/keys';
import { MARKER_KIND } from '../protocol/localRows';
import { RecordStatus, type IdempotencyRecord } from '../protocol/record';
import { MarkerTable } from '../stores/table/MarkerTable';
import { DEFAULT_PARTITION_COUNT, partitionName, tableAddress, validatePartitionCount } from '../stores/table/partitions';
import { classifyStoreError, toDomainError } from '../stores/table/storeErrors';
import { deleteRowsIfUnchanged, type VersionedRow } from '../stores/table/sweep/conditionalBatchDelete';
import { TableIdempotencyStore } from '../stores/table/TableIdempotencyStore';
import { int64, localRowKey, toRecord } from '../stores/table/tableRows';
import { OperatorUsageError, TABLE_ROLES, withRoleHint } from './operatorErrors';
import type { ConditionalOutcome, RecordPage, RecordQuery, RecordsBackend } from './RecordsBackend';
import { isReleaseOf } from './releaseRules';

/** Options of {@link tableRecords}. */
export interface TableRecordsOptions {
  /** The store's partition count (`partitionCount`, the app's `IDEMPOTENCY_PARTITION_COUNT`): default 16. */
  readonly partitionCount?: number;
  /** Deadline of each call, SDK retries included. Default 5 s. */
  readonly callTimeoutMs?: number;
}

/** Where a Table listing stands: the partition (index) and the service's continuation inside it. */
interface TableCursor {
  readonly p: number;
  readonly t?: string;
}

/**
 * The operator's access to a Table store's records (see {@link RecordsBackend}). A listing is one query per
 * partition (`PartitionKey eq 'pNNN'` and the consumer, status and age as a filter: the markers of all consumers
 * share the partitions, which spread keys by hash), one request per page, partition after partition; a page may be
 * empty with a continuation (Azure answers so when a filtered scan reaches its time or size limit), which is
 * followed like any other. Writes are `If-Match` on the marker's ETag; an eviction deletes the marker and its local
 * rows in one conditional transaction.
 * @throws ConfigurationError for a partition count out of range.
 */
export function tableRecords(client: TableClient, options: TableRecordsOptions = {}): RecordsBackend {
  const partitionCount = validatePartitionCount(options.partitionCount ?? DEFAULT_PARTITION_COUNT);
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  const table = new MarkerTable(client, callTimeoutMs);
  const addressOf = (key: IdempotencyKey) => tableAddress(key, partitionCount);
  const guard = async <T>(kind: 'read' | 'write', operation: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw withRoleHint(error instanceof IdempotencyError ? error : toDomainError(error, operation, kind), TABLE_ROLES, kind, operation);
    }
  };

  const queryPage = (query: RecordQuery, cursor: string | undefined, pageSize: number): Promise<RecordPage> =>
    guard('read', 'keys.list', async () => {
      const at = decodeCursor(cursor, partitionCount);
      const filter = tableListFilter(partitionName(at.p), query);
      const page = await withDeadline(callTimeoutMs, 'keys.list', 'read', async (abortSignal) => {
        const pages = client
          .listEntities<Record<string, unknown>>({ queryOptions: { filter }, abortSignal })
          .byPage({ maxPageSize: pageSize, continuationToken: at.t });
        const next = await pages.next();
        return next.done ? Object.assign([], { continuationToken: undefined }) : next.value;
      });
      const records = page.map((entity) => toRecord(entity));
      const next: TableCursor | undefined = page.continuationToken
        ? { p: at.p, t: page.continuationToken }
        : at.p + 1 < partitionCount
          ? { p: at.p + 1 }
          : undefined;
      return { records, cursor: next && encodeCursor(next) };
    });

  const releaseIf = (record: IdempotencyRecord, lastError: string, nowMs: number): Promise<ConditionalOutcome<IdempotencyRecord>> =>
    guard('write', 'keys.release', async () => {
      const address = addressOf(record);
      const change = { status: RecordStatus.Released, leaseExpiresAtMs: int64(0), lastError, updatedAtMs: int64(nowMs) };
      const written = await table.write({ ...address, ...change }, [], [], 'merge', record.etag, 'keys.release');
      if ('etag' in written)
        return { kind: 'done', value: { ...record, status: RecordStatus.Released, leaseExpiresAtMs: 0, lastError, updatedAtMs: nowMs, etag: written.etag } };
      // 412 or 404: read what is there. Our own write whose answer was lost (the SDK retried it) is done, not changed.
      const now = await table.read(address);
      if (!now) return { kind: 'gone' };
      return isReleaseOf(now, record, lastError) ? { kind: 'done', value: now } : { kind: 'changed' };
    });

  const deleteIf = (record: IdempotencyRecord): Promise<ConditionalOutcome<{ readonly localRows: number }>> =>
    guard('write', 'keys.evict', async () => {
      const address = addressOf(record);
      let rows = record.localRows;
      for (let round = 0; round < 3; round++) {
        const group: VersionedRow[] = [
          { ...address, etag: record.etag },
          ...rows.map((name) => ({ partitionKey: address.partitionKey, rowKey: localRowKey(address.rowKey, name), etag: '*' })),
        ];
        try {
          await withDeadline(callTimeoutMs, 'keys.evict', 'write', (abortSignal) =>
            group.length === 1
              ? client.deleteEntity(address.partitionKey, address.rowKey, { etag: record.etag, abortSignal }).then(() => undefined)
              : deleteRowsIfUnchanged(client, group),
          );
          return { kind: 'done', value: { localRows: rows.length } };
        } catch (error) {
          if (error instanceof IdempotencyError) throw error;
          const conflict = classifyStoreError(error, 'keys.evict', 'write');
          if (conflict === 'exists') throw toDomainError(error, 'keys.evict', 'write');
          // 412, or 404: the marker is gone or changed, or a listed local row is missing (deleted by hand): read and decide.
          const now = await table.read(address);
          if (!now) return { kind: 'gone' };
          if (now.etag !== record.etag) return { kind: 'changed' };
          const present = await table.readRows(address, rows);
          rows = rows.filter((name) => present.has(name));
        }
      }
      return { kind: 'changed' };
    });

  return {
    kind: 'table',
    roles: TABLE_ROLES,
    read: (key) => guard('read', 'keys.read', () => table.read(addressOf(key))),
    readLocalRow: (key, name) => guard('read', 'keys.readLocalRow', async () => (await table.readRows(addressOf(key), [name])).get(name)),
    queryPage,
    releaseIf,
    deleteIf,
    markerStore: ({ retentionMs, leaseMs, clock }) => new TableIdempotencyStore(client, { partitionCount, retentionMs, leaseMs, callTimeoutMs, clock }),
  };
}

/** The filter of one partition's page of a listing: the consumer's markers, by status and last write. */
export function tableListFilter(partitionKey: string, query: RecordQuery): string {
  const clauses = [`PartitionKey eq ${odata(partitionKey)}`, `kind eq ${odata(MARKER_KIND)}`, `consumer eq ${odata(query.consumer)}`];
  if (query.statuses && query.statuses.length > 0) clauses.push(`(${query.statuses.map((status) => `status eq ${odata(status)}`).join(' or ')})`);
  if (query.updatedAtOrBeforeMs !== undefined) clauses.push(`updatedAtMs le ${Math.trunc(query.updatedAtOrBeforeMs)}L`);
  return clauses.join(' and ');
}

function odata(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

function encodeCursor(cursor: TableCursor): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string | undefined, partitionCount: number): TableCursor {
  if (cursor === undefined) return { p: 0 };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const p = (parsed as TableCursor | undefined)?.p;
  const t = (parsed as TableCursor | undefined)?.t;
  if (!Number.isInteger(p) || p! < 0 || p! >= partitionCount || (t !== undefined && typeof t !== 'string')) {
    throw new OperatorUsageError(`not a listing cursor of this table (with ${partitionCount} partitions): ${JSON.stringify(cursor.slice(0, 60))}`);
  }
  return { p: p!, t };
}
