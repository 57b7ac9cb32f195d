import type { TableClient, TransactionAction } from '@azure/data-tables';
import { RecordStatus, type IdempotencyKey } from 'azure-functions-idempotency';
import {
  classifyStoreError,
  localRowKey,
  parseLocalRows,
  tableAddress,
  toDomainError,
  toRecord,
  LOCAL_ROWS_PROPERTY,
} from 'azure-functions-idempotency/internal';
import { tableRecords } from 'azure-functions-idempotency/operator';
import type { ShardTable } from './shardTables';

/**
 * Moving one record of a payment between shard tables (the consumer's, or the API's `accepted` marker: any consumer): the record is its marker (RowKey = the scoped key's hash) and the
 * local rows listed on it (`localRows`: for payments the Payment row, `<marker>~payment`), all in one partition; the
 * store deletes exactly these with it (sweep, eviction), so these are what move, together.
 */

/** A raw entity with its Edm types kept (`disableTypeConversion`): Int64 stays Int64, Int32 stays Int32. */
export type RawEntity = Record<string, unknown> & { partitionKey?: string; rowKey?: string; etag?: string };

/** The properties a copy carries: all but the keys, the ETag, the service's Timestamp and the response metadata. */
export function bodyOf(entity: RawEntity): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(entity)) {
    if (name === 'partitionKey' || name === 'rowKey' || name === 'etag' || name === 'timestamp' || name.startsWith('odata.')) continue;
    body[name] = value;
  }
  return body;
}

/** A body as comparable text (property names sorted, each value with its Edm type). */
export function fingerprint(body: Record<string, unknown>): string {
  return JSON.stringify(
    Object.keys(body)
      .sort()
      .map((name) => [name, body[name]]),
  );
}

/** The properties in which two bodies differ, for the conflict's message (values are not printed: payload). */
export function differing(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...names].filter((name) => JSON.stringify(a[name]) !== JSON.stringify(b[name])).sort();
}

/** The new shard's table already holds another record (or other rows) for a key that moves there: never overwritten. */
export class ReshardConflictError extends Error {
  override readonly name = 'ReshardConflictError';
  constructor(
    readonly paymentId: string,
    readonly fromShard: number,
    readonly toShard: number,
    readonly rows: readonly string[],
    /** How the operator looks at both (default: the payments record with `npm run keys`). */
    look = `npm run keys -- show --consumer payments --key ${paymentId}, with each shard's settings`,
  ) {
    super(
      `conflict: payment ${paymentId} moving from shard ${fromShard} to shard ${toShard}: shard ${toShard}'s table already holds ` +
        `a different ${rows.join('; ')}. Nothing was overwritten; it stays on shard ${fromShard}. Look at both ` +
        `(${look}) and settle it by hand before running again`,
    );
  }
}

/** The record changed (or is in progress) while it was being moved: the shards were not drained. */
export class ReshardRecordBusyError extends Error {
  override readonly name = 'ReshardRecordBusyError';
  constructor(
    readonly paymentId: string,
    readonly shard: number,
    why: string,
  ) {
    super(`refused: payment ${paymentId} on shard ${shard} ${why}: drain first (no record in progress, every queue empty), then run again`);
  }
}

/** What moving one record did. `copied`: written to the new table; `alreadyThere`: an identical copy was there (a re-run); `gone`: no record to move. */
export type MoveOutcome = 'copied' | 'alreadyThere' | 'gone';

/** Hooks of {@link moveRecord} for tests: `afterCopy` runs between the copy and the delete (a crash there is what a re-run must finish). */
export interface MoveHooks {
  readonly afterCopy?: (paymentId: string) => Promise<void> | void;
}

export async function readRaw(client: TableClient, partitionKey: string, rowKey: string, operation: string): Promise<RawEntity | undefined> {
  try {
    return await client.getEntity(partitionKey, rowKey, { disableTypeConversion: true });
  } catch (error) {
    if (classifyStoreError(error, operation, 'read') === 'notFound') return undefined;
    throw toDomainError(error, operation, 'read');
  }
}

/**
 * Moves the record of `key` from shard table `from` to `to`:
 * 1. reads its marker and its listed rows on `from` (absent: `gone`; in progress: {@link ReshardRecordBusyError});
 * 2. inserts them on `to` in one transaction, insert-if-absent (the partition is the key's in `to`'s partition
 *    count; RowKeys are unchanged). A 409 reads what is there: the same marker and rows (properties and Edm types,
 *    ETag and Timestamp aside) is a copy of an earlier run (`alreadyThere`); anything else a {@link ReshardConflictError}:
 *    never overwritten;
 * 3. deletes the marker and its rows from `from` in one transaction conditional on the marker's ETag as read in 1
 *    (the core's eviction, `deleteIf`): changed since, {@link ReshardRecordBusyError} (the copy stays on `to`, the
 *    next run compares it and stops on the difference); gone meanwhile (the sweep), fine.
 * Re-running after a crash anywhere finishes the job: before the copy nothing was written; after it, the copy is
 * found identical and the delete is done.
 */
export async function moveRecord(key: IdempotencyKey, from: ShardTable, to: ShardTable, hooks: MoveHooks = {}): Promise<MoveOutcome> {
  const source = tableAddress(key, from.partitionCount);
  const marker = await readRaw(from.client, source.partitionKey, source.rowKey, 'reshard.readMarker');
  if (!marker) return 'gone';
  const record = toRecord({ ...plainOf(marker), partitionKey: source.partitionKey, rowKey: source.rowKey, etag: marker.etag });
  if (record.status === RecordStatus.InProgress) throw new ReshardRecordBusyError(key.key, from.shard, 'is in progress');
  const names = parseLocalRows(valueOf(marker[LOCAL_ROWS_PROPERTY]));
  const rows = new Map<string, Record<string, unknown>>();
  for (const name of names) {
    const row = await readRaw(from.client, source.partitionKey, localRowKey(source.rowKey, name), 'reshard.readRow');
    if (row) rows.set(name, bodyOf(row));
  }
  const target = tableAddress(key, to.partitionCount);
  const wanted = new Map<string, Record<string, unknown>>([[source.rowKey, bodyOf(marker)]]);
  for (const [name, body] of rows) wanted.set(localRowKey(source.rowKey, name), body);
  const outcome = await insertAll(to, target.partitionKey, wanted, key, from.shard);
  await hooks.afterCopy?.(key.key);
  const deleted = await tableRecords(from.client, { partitionCount: from.partitionCount }).deleteIf(record);
  if (deleted.kind === 'changed') throw new ReshardRecordBusyError(key.key, from.shard, 'was written while it was being moved (its copy is on the new shard)');
  return outcome;
}

/** Inserts the rows in one transaction; on a 409, compares what is there. */
async function insertAll(
  to: ShardTable,
  partitionKey: string,
  wanted: Map<string, Record<string, unknown>>,
  { consumer, key: paymentId }: IdempotencyKey,
  fromShard: number,
): Promise<MoveOutcome> {
  const actions: TransactionAction[] = [...wanted.entries()].map(([rowKey, body]) => ['create', { ...body, partitionKey, rowKey }]);
  try {
    await to.client.submitTransaction(actions);
    return 'copied';
  } catch (error) {
    if (classifyStoreError(error, 'reshard.copy', 'write') !== 'exists') throw toDomainError(error, 'reshard.copy', 'write');
  }
  const different: string[] = [];
  for (const [rowKey, body] of wanted) {
    const there = await readRaw(to.client, partitionKey, rowKey, 'reshard.compare');
    const what = rowKey.includes('~') ? `row ${rowKey.slice(rowKey.indexOf('~') + 1)}` : 'record';
    if (!there) different.push(`${what} (missing beside the others)`);
    else if (fingerprint(bodyOf(there)) !== fingerprint(body)) different.push(`${what} (${differing(bodyOf(there), body).join(', ')})`);
  }
  const look = `npm run keys -- show --consumer ${consumer} --key ${paymentId}, with each shard's settings`;
  if (different.length > 0) throw new ReshardConflictError(paymentId, fromShard, to.shard, different, look);
  return 'alreadyThere';
}

/** A raw `{ value, type }` property's value, or the value itself. */
function valueOf(value: unknown): unknown {
  return value && typeof value === 'object' && 'value' in value ? value.value : value;
}

/** The marker's properties as `toRecord` reads them (it reads `{ value }` numbers itself; strings and booleans are unwrapped here). */
function plainOf(marker: RawEntity): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(bodyOf(marker))) {
    const type = value && typeof value === 'object' && 'type' in value ? (value as { type: string }).type : undefined;
    out[name] = type === 'String' || type === 'Boolean' ? valueOf(value) : value;
  }
  return out;
}
