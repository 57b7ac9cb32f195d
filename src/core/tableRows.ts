import type { TableEntity, TableEntityResult } from '@azure/data-tables';
import { ConfigurationError, StoreRequestError } from './errors';
import type { LocalEffect } from './IdempotencyStore';
import type { IdempotencyKey } from './keys';
import type { IdempotencyRecord, RecordStatus } from './record';
import type { TableAddress } from './tableEncoding';

/**
 * The row encoding of the Table store: a record is one marker entity (times as `Int64`), its local
 * effects are rows `<marker RowKey>~<name>` in the same partition, listed on the marker
 * (`localRows`, comma-separated). Pure: no I/O.
 */

/** Marker rows carry this `kind`; local-effect rows carry their own. */
export const MARKER_KIND = 'idempotency-marker';
/** Marker property listing its local rows' names, comma-separated (the sweep reads it). */
export const LOCAL_ROWS_PROPERTY = 'localRows';
/** Most local rows of one key: the marker and its rows fit one 100-action transaction. */
export const MAX_LOCAL_ROWS = 99;
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
  const resultJson = entity.resultJson as string | undefined;
  let result: unknown;
  try {
    result = resultJson === undefined ? undefined : JSON.parse(resultJson);
  } catch (cause) {
    throw new StoreRequestError('stored result is not valid JSON', 'read', undefined, cause);
  }
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

/** The names listed in a marker's {@link LOCAL_ROWS_PROPERTY} (absent: none). */
export function parseLocalRows(value: unknown): string[] {
  return typeof value === 'string' && value !== '' ? value.split(',') : [];
}

/** The local rows on record after a write of `effects` to a claim holding `current`. @throws ConfigurationError past {@link MAX_LOCAL_ROWS} */
export function localRowsAfter(current: readonly string[], effects: readonly LocalEffect[]): readonly string[] {
  const names = [...current, ...effects.map((effect) => effect.name).filter((name) => !current.includes(name))];
  if (names.length > MAX_LOCAL_ROWS) throw new ConfigurationError(`a key has at most ${MAX_LOCAL_ROWS} local rows, this write would give it ${names.length}`);
  return names;
}

/**
 * The previous attempt's rows a takeover writing `written` deletes (those it does not write again).
 * @throws ConfigurationError when the writes and deletes would not fit one transaction.
 */
export function staleRowsOnTakeover(previous: readonly string[], written: readonly string[], scopedKey: string): string[] {
  const stale = previous.filter((name) => !written.includes(name));
  if (written.length + stale.length > MAX_LOCAL_ROWS) {
    throw new ConfigurationError(
      `a takeover of ${JSON.stringify(scopedKey)} must write ${written.length} local rows and delete ${stale.length} of the previous attempt: ` +
        `more than one transaction holds (a key has at most ${MAX_LOCAL_ROWS} local row names across its attempts)`,
    );
  }
  return stale;
}
