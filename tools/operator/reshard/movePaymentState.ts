import type { TableClient } from '@azure/data-tables';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/internal';
import { bodyOf, differing, fingerprint, readRaw, ReshardConflictError, ReshardRecordBusyError, type MoveHooks, type MoveOutcome } from './moveRecord';
import type { ShardTable } from './shardTables';

/**
 * Moving the webhook's Payment rows (src/http/PaymentStateTable.ts: table `PAYMENT_STATE_TABLE_NAME`, PartitionKey =
 * paymentId, RowKey `payment`, one row per payment, never swept). Since the shard map the webhook writes a payment's row
 * in its owner's account, so after a change of N it moves with the payment: a row left on the old shard is read by
 * nobody, and a late redelivery of an older event would insert a stale row on the new owner (its version check would
 * see no row). Same rules as the records (`moveRecord`): insert-if-absent, an identical row there is an earlier run's
 * copy, a different one a conflict (never overwritten), then the delete from the old table on the ETag as read.
 */

/** The Payment row's RowKey (src/http/PaymentStateTable.ts). */
export const PAYMENT_STATE_ROW_KEY = 'payment';

/**
 * The paymentIds of every Payment row in `table`'s `paymentstate` table, page by page (`RowKey eq 'payment'`, the
 * PartitionKey only). A table that does not exist yet yields nothing.
 * @throws the store's errors
 */
export async function* paymentStateIdsOf(table: ShardTable, pageSize = 1000): AsyncIterable<string> {
  const pages = table.paymentState
    .listEntities({ queryOptions: { filter: `RowKey eq '${PAYMENT_STATE_ROW_KEY}'`, select: ['PartitionKey'] } })
    .byPage({ maxPageSize: pageSize });
  try {
    for await (const page of pages) for (const entity of page) if (typeof entity.partitionKey === 'string') yield entity.partitionKey;
  } catch (error) {
    if (isTableMissing(error)) return;
    throw toDomainError(error, 'reshard.listPaymentState', 'read');
  }
}

function isTableMissing(error: unknown): boolean {
  return (error as { statusCode?: number }).statusCode === 404;
}

/**
 * Moves the Payment row of `paymentId` from shard `from`'s `paymentstate` to `to`'s:
 * 1. reads it on `from` (absent: `gone`);
 * 2. inserts it on `to` as read (properties with their Edm types); a 409 reads what is there: the same properties
 *    (ETag and Timestamp aside) is an earlier run's copy (`alreadyThere`), anything else a {@link ReshardConflictError}
 *    naming the properties that differ and both versions: never overwritten;
 * 3. deletes it from `from` on the ETag as read: changed since (a webhook wrote it: not stopped), a
 *    {@link ReshardRecordBusyError} (the copy stays on `to`; the next run finds it different and stops); gone, fine.
 * @throws the store's errors
 */
export async function movePaymentStateRow(paymentId: string, from: ShardTable, to: ShardTable, hooks: MoveHooks = {}): Promise<MoveOutcome> {
  const row = await readRaw(from.paymentState, paymentId, PAYMENT_STATE_ROW_KEY, 'reshard.readPaymentState');
  if (!row) return 'gone';
  const body = bodyOf(row);
  const outcome = await insertRow(to.paymentState, paymentId, body, from.shard, to.shard);
  await hooks.afterCopy?.(paymentId);
  try {
    await from.paymentState.deleteEntity(paymentId, PAYMENT_STATE_ROW_KEY, { etag: row.etag });
  } catch (error) {
    const kind = classifyStoreError(error, 'reshard.deletePaymentState', 'write');
    if (kind === 'notFound') return outcome;
    if (kind === 'conditionFailed')
      throw new ReshardRecordBusyError(paymentId, from.shard, 'had its Payment row written while it was being moved (a webhook: its copy is on the new shard)');
    throw toDomainError(error, 'reshard.deletePaymentState', 'write'); // 'exists' is not an answer to a delete
  }
  return outcome;
}

async function insertRow(client: TableClient, paymentId: string, body: Record<string, unknown>, fromShard: number, toShard: number): Promise<MoveOutcome> {
  try {
    await client.createEntity({ ...body, partitionKey: paymentId, rowKey: PAYMENT_STATE_ROW_KEY });
    return 'copied';
  } catch (error) {
    if (classifyStoreError(error, 'reshard.copyPaymentState', 'write') !== 'exists') throw toDomainError(error, 'reshard.copyPaymentState', 'write');
  }
  const there = await readRaw(client, paymentId, PAYMENT_STATE_ROW_KEY, 'reshard.comparePaymentState');
  if (!there) return insertRow(client, paymentId, body, fromShard, toShard); // deleted between the 409 and the read: insert again
  const theirs = bodyOf(there);
  if (fingerprint(theirs) === fingerprint(body)) return 'alreadyThere';
  const versions = `version ${versionOf(theirs)} there, ${versionOf(body)} here`;
  throw new ReshardConflictError(
    paymentId,
    fromShard,
    toShard,
    [`Payment row in paymentstate (${differing(theirs, body).join(', ')}; ${versions})`],
    "the row of each shard's paymentstate table, PartitionKey = the paymentId",
  );
}

function versionOf(body: Record<string, unknown>): string {
  const value = body.version;
  return String(value && typeof value === 'object' && 'value' in value ? value.value : value);
}
