import type { TableEntity, TableEntityResult } from '@azure/data-tables';
import { StoreRequestError } from '../../protocol/errors';
import type { LocalEffect } from '../../protocol/IdempotencyStore';
import type { IdempotencyKey } from '../../protocol/keys';
import type { IdempotencyRecord, RecordStatus } from '../../protocol/record';
import type { TableAddress } from './partitions';
import { LOCAL_ROWS_PROPERTY, MARKER_KIND, parseLocalRows } from '../../protocol/localRows';

/**
 * The row encoding of the Table store: a record is one marker entity (times as `Int64`), its local
 * effects are rows `<marker RowKey>~<name>` in the same partition, listed on the marker
 * (`localRows`, comma-separated). Pure: no I/O.
 */

/** The marker properties a completion, release or lease renewal changes. */
const MUTABLE_PROPERTIES = ['status', 'leaseExpiresAtMs', 'retentionExpiresAtMs', 'updatedAtMs', 'resultJson', 'lastError', LOCAL_ROWS_PROPERTY] as const;

/** The state a write gives a marker. */
export interface MarkerState {
  status: RecordStatus;
  ownerId: string;
  attempt: number;
  leaseExpiresAtMs: number;
  resultJson: string | undefined;
  lastError?: string;
  /** Names of the local rows on record (listed on the marker). */
  localRows: readonly string[];
}

/** What a marker is written with besides its state. */
export interface MarkerFields {
  readonly key: IdempotencyKey;
  readonly address: TableAddress;
  readonly digest: string;
  /** The record's generation (see `IdempotencyRecord.createdAtMs`). */
  readonly createdAtMs: number;
  readonly nowMs: number;
  readonly retentionMs: number;
}

/** The marker entity of a record in `state`, written at `nowMs`. */
export function markerEntity(fields: MarkerFields, state: MarkerState): TableEntity {
  const { key, address, digest, createdAtMs, nowMs, retentionMs } = fields;
  const entity: TableEntity = {
    partitionKey: address.partitionKey,
    rowKey: address.rowKey,
    kind: MARKER_KIND,
    consumer: key.consumer,
    idempotencyKey: key.key,
    digest,
    status: state.status,
    ownerId: state.ownerId,
    attempt: state.attempt,
    leaseExpiresAtMs: int64(state.leaseExpiresAtMs),
    retentionExpiresAtMs: int64(nowMs + retentionMs),
    createdAtMs: int64(createdAtMs),
    updatedAtMs: int64(nowMs),
  };
  if (state.resultJson !== undefined) entity.resultJson = state.resultJson;
  if (state.lastError !== undefined) entity.lastError = state.lastError;
  if (state.localRows.length > 0) entity[LOCAL_ROWS_PROPERTY] = state.localRows.join(',');
  return entity;
}

/**
 * The merge patch of a record in `state` written at `fields.nowMs`: the marker's keys and only the properties a later
 * write changes, built directly (equal to `markerPatch(markerEntity(fields, state))`).
 */
export function markerPatchOf(fields: MarkerFields, state: MarkerState): TableEntity {
  const { address, nowMs, retentionMs } = fields;
  const patch: TableEntity = {
    partitionKey: address.partitionKey,
    rowKey: address.rowKey,
    status: state.status,
    leaseExpiresAtMs: int64(state.leaseExpiresAtMs),
    retentionExpiresAtMs: int64(nowMs + retentionMs),
    updatedAtMs: int64(nowMs),
  };
  if (state.resultJson !== undefined) patch.resultJson = state.resultJson;
  if (state.lastError !== undefined) patch.lastError = state.lastError;
  if (state.localRows.length > 0) patch[LOCAL_ROWS_PROPERTY] = state.localRows.join(',');
  return patch;
}

/**
 * The record a marker written from `fields` and `state` holds once the service answered with `etag`: what
 * `toRecord` of the written entity gives, without encoding the times as `Int64` strings and decoding them again.
 * @throws StoreRequestError when `state.resultJson` is not JSON
 */
export function writtenRecord(fields: MarkerFields, state: MarkerState, etag: string): IdempotencyRecord {
  const { key, address, digest, createdAtMs, nowMs, retentionMs } = fields;
  return {
    recordId: address.rowKey,
    consumer: key.consumer,
    key: key.key,
    status: state.status,
    digest,
    result: parseResult(state.resultJson),
    attempt: state.attempt,
    ownerId: state.ownerId,
    leaseExpiresAtMs: Math.trunc(state.leaseExpiresAtMs),
    retentionExpiresAtMs: Math.trunc(nowMs + retentionMs),
    createdAtMs: Math.trunc(createdAtMs),
    updatedAtMs: Math.trunc(nowMs),
    lastError: state.lastError,
    localRows: state.localRows.length > 0 ? parseLocalRows(state.localRows.join(',')) : [],
    etag,
  };
}

/** The merge patch of a marker: its keys and only the properties a later write changes. */
export function markerPatch(marker: TableEntity): TableEntity {
  const patch: TableEntity = { partitionKey: marker.partitionKey, rowKey: marker.rowKey };
  for (const name of MUTABLE_PROPERTIES) if (marker[name] !== undefined) patch[name] = marker[name];
  return patch;
}

/** The row of local effect `effect` beside `marker` (null values left out). */
export function effectEntity(marker: TableEntity, effect: LocalEffect): TableEntity {
  const properties = Object.fromEntries(Object.entries(effect.properties).filter(([, value]) => value !== null));
  return { ...properties, partitionKey: marker.partitionKey, rowKey: localRowKey(marker.rowKey, effect.name), kind: effect.name };
}

/** A marker entity (as read, or as written with its new etag) as a record. @throws StoreRequestError when its result is not JSON */
export function toRecord(entity: TableEntityResult<Record<string, unknown>> | TableEntity): IdempotencyRecord {
  const result = parseResult(entity.resultJson as string | undefined);
  const updatedAtMs = toNumber(entity.updatedAtMs);
  return {
    recordId: String(entity.rowKey),
    consumer: String(entity.consumer),
    key: String(entity.idempotencyKey),
    status: entity.status as RecordStatus,
    digest: String(entity.digest),
    result,
    attempt: toNumber(entity.attempt),
    ownerId: String(entity.ownerId),
    leaseExpiresAtMs: toNumber(entity.leaseExpiresAtMs),
    retentionExpiresAtMs: toNumber(entity.retentionExpiresAtMs),
    createdAtMs: toNumber(entity.createdAtMs ?? updatedAtMs),
    updatedAtMs,
    lastError: typeof entity.lastError === 'string' ? entity.lastError : undefined,
    localRows: parseLocalRows(entity[LOCAL_ROWS_PROPERTY]),
    etag: String(entity.etag),
  };
}

/** A stored result: its JSON parsed (a copy the caller may keep), or undefined. @throws StoreRequestError when not JSON */
function parseResult(resultJson: string | undefined): unknown {
  try {
    return resultJson === undefined ? undefined : JSON.parse(resultJson);
  } catch (cause) {
    throw new StoreRequestError('stored result is not valid JSON', 'read', undefined, cause);
  }
}

/** An epoch-ms time as a Table `Int64` (a JavaScript number would be stored as a Double). */
export function int64(value: number): { value: string; type: 'Int64' } {
  return { value: String(Math.trunc(value)), type: 'Int64' };
}

/** A number property as read back: a number, a bigint, a numeric string or an `{ value, type }` Int64. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string') return Number(value);
  if (value && typeof value === 'object' && 'value' in value) return Number(value.value);
  return Number.NaN;
}

/** The RowKey of local row `name` of the marker `markerRowKey`. */
export function localRowKey(markerRowKey: string, name: string): string {
  return `${markerRowKey}~${name}`;
}
