import { StoreRequestError } from '../../protocol/errors';
import type { LocalEffect } from '../../protocol/IdempotencyStore';
import type { IdempotencyKey } from '../../protocol/keys';
import type { IdempotencyRecord, RecordStatus } from '../../protocol/record';
import { storedRowProperties } from '../../protocol/recordRules';
import { MARKER_KIND } from '../../protocol/localRows';

/**
 * The document encoding of the Cosmos DB store. Pure: no I/O.
 *
 * - One container, partition key path {@link COSMOS_PARTITION_KEY_PATH} (`/recordId`). A record's marker
 *   has `id` = `recordId` = SHA-256 hex of the scoped key (the Table store's RowKey); its local rows have
 *   `id` = `<recordId>~<name>` and the same `recordId`, so marker and rows share one logical partition and
 *   commit in one transactional batch. One logical partition per key spreads load evenly over physical
 *   partitions (no hot bucket) and stays far below the 20 GB cap of a logical partition (one record and at
 *   most 99 rows). Cross-key queries are never needed: expiry is the container's TTL, not a sweep.
 * - A row's own properties are kept under `properties`, so no name a user picks can collide with
 *   `id`, `ttl`, the partition key or the service's `_etag`, `_ts`...: the Table store's name rules
 *   (validated by `localEffects.ts`) are the only ones, and both stores refuse exactly the same rows.
 * - Every document carries `ttl` (seconds, counted by the service from the document's last write): see
 *   {@link ttlSeconds}. The container must have TTL on (`defaultTtl: -1`).
 */

/** The container's partition key path: every document of one record shares its `recordId`. */
export const COSMOS_PARTITION_KEY_PATH = '/recordId';
/**
 * Seconds added to every document's TTL beyond the record's own end: covers the skew between this
 * process's clock (which sets the record's times) and the service's (which counts `ttl` from `_ts`).
 */
export const TTL_MARGIN_SECONDS = 300;

/** The marker document of a record (the service adds `_etag`, `_ts`...). */
export interface MarkerDocument {
  id: string;
  recordId: string;
  kind: typeof MARKER_KIND;
  consumer: string;
  idempotencyKey: string;
  digest: string;
  status: RecordStatus;
  ownerId: string;
  attempt: number;
  leaseExpiresAtMs: number;
  retentionExpiresAtMs: number;
  createdAtMs: number;
  updatedAtMs: number;
  resultJson?: string;
  lastError?: string;
  localRows: string[];
  ttl: number;
}

/** A local row document beside its marker. */
export interface RowDocument {
  id: string;
  recordId: string;
  kind: string;
  properties: Record<string, string | number | boolean>;
  ttl: number;
}

/** The state a write gives a marker (as the Table store's `MarkerState`). */
export interface CosmosMarkerState {
  status: RecordStatus;
  ownerId: string;
  attempt: number;
  leaseExpiresAtMs: number;
  resultJson: string | undefined;
  lastError?: string;
  localRows: readonly string[];
}

/** What a marker is written with besides its state. */
export interface CosmosMarkerFields {
  readonly key: IdempotencyKey;
  readonly recordId: string;
  readonly digest: string;
  readonly createdAtMs: number;
  readonly nowMs: number;
  readonly retentionMs: number;
}

/**
 * The `ttl` of a document written at `nowMs` for a record that ends at `retentionExpiresAtMs` and holds a
 * lease to `leaseExpiresAtMs`: whole seconds to the later of the two, rounded up, plus
 * {@link TTL_MARGIN_SECONDS}. So the service never deletes a record before the decision rules would
 * count it as absent (`isExpired`), and an in-progress record never expires under a valid lease: every
 * renewal rewrites the marker with a TTL past its new lease end. Deleting later than that is harmless
 * (an expired record is treated as absent until the service removes it).
 */
export function ttlSeconds(nowMs: number, retentionExpiresAtMs: number, leaseExpiresAtMs: number): number {
  const end = Math.max(retentionExpiresAtMs, leaseExpiresAtMs);
  return Math.max(1, Math.ceil((end - nowMs) / 1000)) + TTL_MARGIN_SECONDS;
}

/** The marker document of a record in `state`, written at `nowMs`. */
export function markerDocument(fields: CosmosMarkerFields, state: CosmosMarkerState): MarkerDocument {
  const { key, recordId, digest, createdAtMs, nowMs, retentionMs } = fields;
  const leaseExpiresAtMs = Math.trunc(state.leaseExpiresAtMs);
  const retentionExpiresAtMs = Math.trunc(nowMs + retentionMs);
  const doc: MarkerDocument = {
    id: recordId,
    recordId,
    kind: MARKER_KIND,
    consumer: key.consumer,
    idempotencyKey: key.key,
    digest,
    status: state.status,
    ownerId: state.ownerId,
    attempt: state.attempt,
    leaseExpiresAtMs,
    retentionExpiresAtMs,
    createdAtMs: Math.trunc(createdAtMs),
    updatedAtMs: Math.trunc(nowMs),
    localRows: [...state.localRows],
    ttl: ttlSeconds(nowMs, retentionExpiresAtMs, leaseExpiresAtMs),
  };
  if (state.resultJson !== undefined) doc.resultJson = state.resultJson;
  if (state.lastError !== undefined) doc.lastError = state.lastError;
  return doc;
}

/** The id of local row `name` of the record `recordId`. */
export function rowDocumentId(recordId: string, name: string): string {
  return `${recordId}~${name}`;
}

/** The document of local effect `effect` beside `marker` (null values left out, as the Table store does), with the marker's TTL. */
export function rowDocument(marker: MarkerDocument, effect: LocalEffect): RowDocument {
  return {
    id: rowDocumentId(marker.recordId, effect.name),
    recordId: marker.recordId,
    kind: effect.name,
    properties: storedRowProperties(effect.properties),
    ttl: marker.ttl,
  };
}

/** A marker document as read (or as written, with its new ETag) as a record. @throws StoreRequestError when its result is not JSON */
export function markerToRecord(doc: Record<string, unknown>, etag: string): IdempotencyRecord {
  const resultJson = doc.resultJson as string | undefined;
  let result: unknown;
  try {
    result = resultJson === undefined ? undefined : JSON.parse(resultJson);
  } catch (cause) {
    throw new StoreRequestError('stored result is not valid JSON', 'read', undefined, cause);
  }
  return {
    recordId: String(doc.id),
    consumer: String(doc.consumer),
    key: String(doc.idempotencyKey),
    status: doc.status as RecordStatus,
    digest: String(doc.digest),
    result,
    attempt: Number(doc.attempt),
    ownerId: String(doc.ownerId),
    leaseExpiresAtMs: Number(doc.leaseExpiresAtMs),
    retentionExpiresAtMs: Number(doc.retentionExpiresAtMs),
    createdAtMs: Number(doc.createdAtMs ?? doc.updatedAtMs),
    updatedAtMs: Number(doc.updatedAtMs),
    lastError: typeof doc.lastError === 'string' ? doc.lastError : undefined,
    localRows: Array.isArray(doc.localRows) ? doc.localRows.map(String) : [],
    etag,
  };
}
