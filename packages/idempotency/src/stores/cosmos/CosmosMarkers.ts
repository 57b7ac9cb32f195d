import { requireConditionEtag } from '../../protocol/conditionEtag';
import type { Container, CosmosClient, JSONObject, OperationInput } from '@azure/cosmos';
import { COSMOS_PARTITION_KEY_PATH, markerToRecord, rowDocumentId, type MarkerDocument, type RowDocument } from './cosmosDocuments';
import { classifyCosmosStoreError, cosmosErrorStatus, cosmosStoreError } from './cosmosStoreErrors';
import { CallDeadlines } from '../../protocol/CallDeadlines';
import { withDeadline, type StoreCallKind } from '../../protocol/deadline';
import { IdempotencyError, StoreRequestError } from '../../protocol/errors';
import type { IdempotencyRecord } from '../../protocol/record';
import { conflictOfStatus, type StoreConflict } from '../../protocol/storeConflict';

/** How a marker is written: create-if-absent (409 when present), or replace only if its `_etag` matches (If-Match, 412). */
export type CosmosWriteMode = 'create' | 'replace';

/** A write's answer: the marker's new ETag; a conflict of the marker; or local rows to delete that are already gone. */
export type CosmosWriteResult = { readonly etag: string } | { readonly conflict: StoreConflict } | { readonly missingRows: readonly string[] };

/** One request's cost, as the service reported it (`x-ms-request-charge`), for telemetry, tests and the bench. */
export interface CosmosRequestCharge {
  /** The store operation (`claim`, `takeover`, `complete`, `read`...). */
  readonly operation: string;
  /** `read`, `create`, `replace`, `batch`. */
  readonly request: string;
  /** Request units charged, from the response headers (0 when the answer carried none). */
  readonly requestCharge: number;
  /** HTTP status of the answer (undefined when there was none). */
  readonly statusCode: number | undefined;
}

/** A local row as read: its own properties. */
export type StoredRow = RowDocument['properties'];

/**
 * The Cosmos DB I/O of the idempotency store: every SDK call under one deadline (`CallDeadlines`: one timer for all), every
 * failure classified (`cosmosStoreErrors.ts`): 409/412/404 come back as a conflict, all else as a domain
 * error; every answer's request charge reported to `onCharge`. Knows nothing of the decision rules.
 */
export class CosmosMarkers {
  private readonly deadlines: CallDeadlines;

  constructor(
    readonly container: Container,
    readonly callTimeoutMs: number,
    private readonly onCharge: (charge: CosmosRequestCharge) => void = () => undefined,
  ) {
    this.deadlines = new CallDeadlines(callTimeoutMs, 'cosmos store');
  }

  /** The marker of `recordId`, or undefined. @throws StoreUnavailableError, StoreRequestError */
  async read(recordId: string, operation = 'read'): Promise<IdempotencyRecord | undefined> {
    const doc = await this.readDocument(recordId, recordId, operation);
    return doc && markerToRecord(doc.resource, doc.etag);
  }

  /**
   * The marker document of `recordId` as stored (the service's `_etag`, `_ts`... included) and its ETag, or
   * undefined: for a writer that changes a few properties and keeps the rest (the expiry timer's hold).
   * @throws StoreUnavailableError, StoreRequestError
   */
  async readMarkerDocument(recordId: string, operation = 'read'): Promise<{ resource: Record<string, unknown>; etag: string } | undefined> {
    return this.readDocument(recordId, recordId, operation);
  }

  /**
   * The local rows `names` of `recordId`: name -> the row's own properties, absent rows missing. One
   * point read per row. @throws StoreUnavailableError, StoreRequestError
   */
  async readRows(recordId: string, names: readonly string[], operation = 'readRows'): Promise<Map<string, StoredRow>> {
    const rows = new Map<string, StoredRow>();
    for (const name of names) {
      const doc = await this.readDocument(rowDocumentId(recordId, name), recordId, operation);
      if (doc) rows.set(name, { ...(doc.resource.properties as StoredRow) });
    }
    return rows;
  }

  /**
   * One write: the marker alone (a point create or replace), or the marker first, then the rows to upsert
   * and the rows to delete, in one transactional batch of the record's logical partition (all or nothing on
   * the real service). A delete of a row that is already gone answers `missingRows`. A replace needs the marker's
   * `etag` (If-Match): an undefined or empty one is refused before anything is sent (see `requireConditionEtag`).
   * @throws StoreUnavailableError, StoreRequestError (never a raw SDK error)
   */
  async write(
    marker: MarkerDocument,
    upserts: readonly RowDocument[],
    deletes: readonly string[],
    mode: CosmosWriteMode,
    etag: string | undefined,
    operation: string,
  ): Promise<CosmosWriteResult> {
    const partitionKey = marker.recordId;
    const body = marker as unknown as JSONObject;
    if (mode !== 'create') requireConditionEtag(etag, operation, 'cosmos store');
    if (upserts.length === 0 && deletes.length === 0) {
      const request = mode === 'create' ? 'create' : 'replace';
      try {
        const response = await this.call(operation, request, 'write', (abortSignal) =>
          mode === 'create'
            ? this.container.items.create(body, { abortSignal })
            : this.container.item(marker.id, partitionKey).replace(body, { abortSignal, accessCondition: { type: 'IfMatch', condition: etag ?? '' } }),
        );
        return { etag: requireEtag(response.etag ?? (response.resource as { _etag?: string } | undefined)?._etag, operation) };
      } catch (error) {
        if (error instanceof IdempotencyError) throw error;
        return { conflict: classifyCosmosStoreError(error, operation, 'write') };
      }
    }
    const markerOp: OperationInput =
      mode === 'create'
        ? { operationType: 'Create', partitionKey, resourceBody: body }
        : { operationType: 'Replace', id: marker.id, partitionKey, ifMatch: etag, resourceBody: body };
    const operations: OperationInput[] = [
      markerOp,
      ...upserts.map((row): OperationInput => ({ operationType: 'Upsert', partitionKey, resourceBody: row as unknown as JSONObject })),
      ...deletes.map((name): OperationInput => ({ operationType: 'Delete', partitionKey, id: rowDocumentId(partitionKey, name) })),
    ];
    let response;
    try {
      response = await this.call(operation, 'batch', 'write', (abortSignal) => this.container.items.batch(operations, partitionKey, { abortSignal }));
    } catch (error) {
      // The SDK rethrows a failed batch request (throttled, no answer) as a plain Error without its status.
      throw cosmosStoreError(error, operation, 'write');
    }
    const results = response.result ?? [];
    const failed = results.findIndex((result) => result.statusCode >= 400 && result.statusCode !== 424);
    if (failed === -1 && results.length === operations.length) return { etag: requireEtag(results[0]?.eTag, operation) };
    const status = failed === -1 ? response.code : results[failed]?.statusCode;
    if (failed === 0 && conflictOfStatus(status)) return { conflict: conflictOfStatus(status)! };
    const deleteIndex = failed - 1 - upserts.length;
    if (status === 404 && deleteIndex >= 0) return { missingRows: [deletes[deleteIndex]] };
    throw cosmosStoreError({ code: status }, `${operation} (batch operation ${failed})`, 'write', status);
  }

  /** Creates the database and container when absent (partition key, TTL on). For local runs and tests; in Azure the Bicep does. */
  static async ensureContainer(client: CosmosClient, databaseName: string, containerName: string, callTimeoutMs: number): Promise<Container> {
    try {
      return await withDeadline(
        callTimeoutMs,
        'ensureContainer',
        'write',
        async (abortSignal) => {
          const { database } = await client.databases.createIfNotExists({ id: databaseName }, { abortSignal });
          const { container } = await database.containers.createIfNotExists(
            { id: containerName, partitionKey: { paths: [COSMOS_PARTITION_KEY_PATH] }, defaultTtl: -1 },
            { abortSignal },
          );
          return container;
        },
        'cosmos store',
      );
    } catch (error) {
      throw cosmosStoreError(error, 'ensureContainer', 'write');
    }
  }

  private async readDocument(id: string, partitionKey: string, operation: string): Promise<{ resource: Record<string, unknown>; etag: string } | undefined> {
    try {
      const response = await this.call(operation, 'read', 'read', (abortSignal) =>
        this.container.item(id, partitionKey).read<Record<string, unknown>>({ abortSignal }),
      );
      if (response.statusCode === 404 || !response.resource) return undefined;
      return { resource: response.resource, etag: requireEtag(response.etag ?? response.resource._etag, operation) };
    } catch (error) {
      if (error instanceof IdempotencyError) throw error;
      if (classifyCosmosStoreError(error, operation, 'read') === 'notFound') return undefined;
      throw new StoreRequestError(`unexpected conflict answer to a read (${cosmosErrorStatus(error)})`, operation, cosmosErrorStatus(error), error);
    }
  }

  /** Every SDK call goes through here: one deadline for all (see deadline.ts), and its charge reported. */
  private async call<T extends ChargedAnswer>(
    operation: string,
    request: string,
    kind: StoreCallKind,
    sdkCall: (abortSignal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    try {
      const response = await this.deadlines.run(operation, kind, sdkCall);
      this.report(operation, request, response.headers, response.statusCode ?? response.code);
      return response;
    } catch (error) {
      const e = error as { headers?: Record<string, unknown> };
      this.report(operation, request, e?.headers, cosmosErrorStatus(error));
      throw error;
    }
  }

  private report(operation: string, request: string, headers: Record<string, unknown> | undefined, statusCode: number | undefined): void {
    const charge = Number(headers?.['x-ms-request-charge'] ?? 0);
    try {
      this.onCharge({ operation, request, requestCharge: Number.isFinite(charge) ? charge : 0, statusCode });
    } catch {
      // A charge observer is telemetry: it never changes an outcome.
    }
  }
}

/** What every SDK answer carries: headers (with the request charge) and a status. */
interface ChargedAnswer {
  readonly headers?: Record<string, unknown>;
  readonly statusCode?: number;
  readonly code?: number;
}

function requireEtag(etag: string | undefined, operation: string): string {
  if (!etag) throw new StoreRequestError(`store returned no etag for ${operation}`, operation, undefined);
  return etag;
}
