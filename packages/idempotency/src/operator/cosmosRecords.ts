import type { Container, OperationInput, SqlParameter, SqlQuerySpec } from '@azure/cosmos';
import { DEFAULT_STORE_TIMEOUT_MS, withDeadline } from '../protocol/deadline';
import { IdempotencyError, StoreUnavailableError } from '../protocol/errors';
import type { IdempotencyKey } from '../protocol/keys';
import { MARKER_KIND } from '../protocol/localRows';
import { RecordStatus, type IdempotencyRecord } from '../protocol/record';
import { scopedKeyHash } from '../protocol/recordId';
import { conflictOfStatus } from '../protocol/storeConflict';
import { CosmosIdempotencyStore } from '../stores/cosmos/CosmosIdempotencyStore';
import { markerToRecord, rowDocumentId, ttlSeconds, type MarkerDocument } from '../stores/cosmos/cosmosDocuments';
import { CosmosMarkers } from '../stores/cosmos/CosmosMarkers';
import { cosmosErrorStatus, cosmosStoreError } from '../stores/cosmos/cosmosStoreErrors';
import { COSMOS_ROLES, withRoleHint } from './operatorErrors';
import type { ConditionalOutcome, RecordPage, RecordQuery, RecordsBackend } from './RecordsBackend';
import { isReleaseOf } from './releaseRules';

/** Options of {@link cosmosRecords}. */
export interface CosmosRecordsOptions {
  /** Deadline of each call, SDK retries included. Default 5 s. */
  readonly callTimeoutMs?: number;
}

/**
 * The operator's access to a Cosmos store's records (see {@link RecordsBackend}). The store's partition key is the
 * record id (one logical partition per key), so there is no consumer partition: a listing is one parameterised
 * cross-partition query (`kind`, `consumer`, status, age in the WHERE clause), one request per page, following the
 * continuation token across empty pages (the service answers those while it fans out). Writes are replaces and
 * deletes with `If-Match` on the marker's `_etag`; a release rewrites the marker's `ttl` to the same end (the
 * service counts `ttl` from the last write); an eviction deletes the marker and its rows in one batch.
 */
export function cosmosRecords(container: Container, options: CosmosRecordsOptions = {}): RecordsBackend {
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  const markers = new CosmosMarkers(container, callTimeoutMs);
  const guard = async <T>(kind: 'read' | 'write', operation: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw withRoleHint(error instanceof IdempotencyError ? error : cosmosStoreError(error, operation, kind), COSMOS_ROLES, kind, operation);
    }
  };
  const idOf = (key: IdempotencyKey) => scopedKeyHash(key);

  const queryPage = (query: RecordQuery, cursor: string | undefined, pageSize: number): Promise<RecordPage> =>
    guard('read', 'keys.list', async () => {
      const response = await withDeadline(
        callTimeoutMs,
        'keys.list',
        'read',
        (abortSignal) =>
          container.items
            .query<Record<string, unknown>>(cosmosListQuery(query), { maxItemCount: pageSize, continuationToken: cursor, abortSignal })
            .fetchNext(),
        'cosmos store',
      );
      const records = (response.resources ?? []).map((doc) => markerToRecord(doc, typeof doc._etag === 'string' ? doc._etag : ''));
      return { records, cursor: response.continuationToken || undefined };
    });

  const releaseIf = (record: IdempotencyRecord, lastError: string, nowMs: number): Promise<ConditionalOutcome<IdempotencyRecord>> =>
    guard('write', 'keys.release', async () => {
      const doc = await markers.readMarkerDocument(record.recordId, 'keys.release');
      if (!doc) return { kind: 'gone' };
      if (doc.etag !== record.etag) return { kind: 'changed' };
      const released = {
        ...doc.resource,
        status: RecordStatus.Released,
        leaseExpiresAtMs: 0,
        lastError,
        updatedAtMs: Math.trunc(nowMs),
        // The same end as before: `ttl` counts from this write.
        ttl: ttlSeconds(nowMs, record.retentionExpiresAtMs, 0),
      } as unknown as MarkerDocument;
      let written;
      try {
        written = await markers.write(released, [], [], 'replace', record.etag, 'keys.release');
      } catch (error) {
        // No answer (the Cosmos SDK does not retry a write after a lost connection): the record says whether it landed.
        if (!(error instanceof StoreUnavailableError) || !error.writeMayHaveLanded) throw error;
        written = { conflict: 'conditionFailed' as const };
      }
      if ('etag' in written) return { kind: 'done', value: markerToRecord(released as unknown as Record<string, unknown>, written.etag) };
      const now = await markers.read(record.recordId, 'keys.release');
      if (!now) return { kind: 'gone' };
      return isReleaseOf(now, record, lastError) ? { kind: 'done', value: now } : { kind: 'changed' };
    });

  const deleteIf = (record: IdempotencyRecord): Promise<ConditionalOutcome<{ readonly localRows: number }>> =>
    guard('write', 'keys.evict', async () => {
      const recordId = record.recordId;
      let rows = record.localRows;
      for (let round = 0; round < 3; round++) {
        const status = await withDeadline(
          callTimeoutMs,
          'keys.evict',
          'write',
          (abortSignal) => deleteGroup(container, record, rows, abortSignal),
          'cosmos store',
        );
        if (status.failed === undefined) return { kind: 'done', value: { localRows: rows.length } };
        if (status.failed === 0 && conflictOfStatus(status.code) === 'conditionFailed') return { kind: 'changed' };
        if (status.failed === 0 && conflictOfStatus(status.code) === 'notFound') return { kind: 'gone' };
        if (status.code !== 404) throw cosmosStoreError({ code: status.code }, `keys.evict (batch operation ${status.failed})`, 'write', status.code);
        // A listed row is missing (deleted by hand): delete the marker with the rows that are there.
        const present = await markers.readRows(recordId, rows, 'keys.evict');
        const now = await markers.read(recordId, 'keys.evict');
        if (!now) return { kind: 'gone' };
        if (now.etag !== record.etag) return { kind: 'changed' };
        rows = rows.filter((name) => present.has(name));
      }
      return { kind: 'changed' };
    });

  return {
    kind: 'cosmos',
    roles: COSMOS_ROLES,
    read: (key) => guard('read', 'keys.read', () => markers.read(idOf(key), 'keys.read')),
    readLocalRow: (key, name) => guard('read', 'keys.readLocalRow', async () => (await markers.readRows(idOf(key), [name], 'keys.readLocalRow')).get(name)),
    queryPage,
    releaseIf,
    deleteIf,
    markerStore: ({ retentionMs, leaseMs, clock }) => new CosmosIdempotencyStore(container, { retentionMs, leaseMs, callTimeoutMs, clock }),
  };
}

/** The marker and its rows deleted, the marker first with `If-Match` (a batch fails at its first failing operation). */
async function deleteGroup(
  container: Container,
  record: IdempotencyRecord,
  rows: readonly string[],
  abortSignal: AbortSignal,
): Promise<{ failed: number | undefined; code: number | undefined }> {
  const recordId = record.recordId;
  if (rows.length === 0) {
    try {
      await container.item(recordId, recordId).delete({ accessCondition: { type: 'IfMatch', condition: record.etag }, abortSignal });
      return { failed: undefined, code: 204 };
    } catch (error) {
      const code = cosmosErrorStatus(error);
      if (conflictOfStatus(code)) return { failed: 0, code };
      throw error;
    }
  }
  const operations: OperationInput[] = [
    // The SDK's type leaves `ifMatch` out of a batch delete, but sends it and the service honours it (as .NET's IfMatchEtag).
    { operationType: 'Delete', id: recordId, partitionKey: recordId, ifMatch: record.etag } as OperationInput,
    ...rows.map((name): OperationInput => ({ operationType: 'Delete', id: rowDocumentId(recordId, name), partitionKey: recordId })),
  ];
  const response = await container.items.batch(operations, recordId, { abortSignal });
  const results = response.result ?? [];
  const failed = results.findIndex((result) => result.statusCode >= 400 && result.statusCode !== 424);
  if (failed === -1 && results.length === operations.length) return { failed: undefined, code: response.code };
  return { failed: failed === -1 ? 0 : failed, code: failed === -1 ? response.code : results[failed]?.statusCode };
}

/** The query of a listing: the consumer's markers, by status and last write (parameters, never text built from input). */
export function cosmosListQuery(query: RecordQuery): SqlQuerySpec {
  const parameters: SqlParameter[] = [
    { name: '@kind', value: MARKER_KIND },
    { name: '@consumer', value: query.consumer },
  ];
  let text = 'SELECT * FROM c WHERE c.kind = @kind AND c.consumer = @consumer';
  if (query.statuses && query.statuses.length > 0) {
    text += ` AND (${query.statuses.map((_, i) => `c.status = @s${i}`).join(' OR ')})`;
    query.statuses.forEach((status, i) => parameters.push({ name: `@s${i}`, value: status }));
  }
  if (query.updatedAtOrBeforeMs !== undefined) {
    text += ' AND c.updatedAtMs <= @before';
    parameters.push({ name: '@before', value: Math.trunc(query.updatedAtOrBeforeMs) });
  }
  return { query: text, parameters };
}
