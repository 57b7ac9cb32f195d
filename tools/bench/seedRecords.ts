import type { TableClient, TableEntity, TransactionAction } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { runConcurrent } from './runConcurrent';
import { MARKER_KIND, RecordStatus, tableAddress, toDomainError, type IdempotencyKey } from 'azure-functions-idempotency/internal';

/** One marker record to write directly, with the fields `TableIdempotencyStore` writes. */
export interface SeedRecord {
  readonly key: IdempotencyKey;
  readonly status: RecordStatus;
  readonly digest?: string;
  readonly attempt?: number;
  readonly leaseExpiresAtMs: number;
  readonly retentionExpiresAtMs: number;
  readonly updatedAtMs: number;
  readonly resultJson?: string;
}

/**
 * The table entity `TableIdempotencyStore` would have written for `record` (same properties,
 * same types: times as Int64), so seeded rows are indistinguishable from claimed ones.
 */
export function seedMarkerEntity(record: SeedRecord, partitionCount = 16): TableEntity {
  const address = tableAddress(record.key, partitionCount);
  const entity: TableEntity = {
    partitionKey: address.partitionKey,
    rowKey: address.rowKey,
    kind: MARKER_KIND,
    consumer: record.key.consumer,
    idempotencyKey: record.key.key,
    digest: record.digest ?? '0'.repeat(64),
    status: record.status,
    ownerId: randomUUID(),
    attempt: record.attempt ?? 1,
    leaseExpiresAtMs: int64(record.leaseExpiresAtMs),
    retentionExpiresAtMs: int64(record.retentionExpiresAtMs),
    createdAtMs: int64(record.updatedAtMs),
    updatedAtMs: int64(record.updatedAtMs),
  };
  if (record.resultJson !== undefined) entity.resultJson = record.resultJson;
  return entity;
}

/** A completed record that expired `agoMs` before `nowMs`. */
export function expiredRecord(key: IdempotencyKey, nowMs: number, agoMs = 1_000): SeedRecord {
  return {
    key,
    status: RecordStatus.Completed,
    leaseExpiresAtMs: 0,
    retentionExpiresAtMs: nowMs - agoMs,
    updatedAtMs: nowMs - agoMs - 86_400_000,
    resultJson: '{"ok":true}',
  };
}

/**
 * Inserts `entities` with entity-group transactions of up to 100 per partition, `concurrency`
 * transactions at a time. @returns the number of transactions sent.
 * @throws StoreUnavailableError / StoreRequestError (e.g. 409 when a row exists)
 */
export async function insertInBatches(client: TableClient, entities: readonly TableEntity[], concurrency = 8): Promise<number> {
  const byPartition = new Map<string, TableEntity[]>();
  for (const entity of entities) byPartition.set(entity.partitionKey, [...(byPartition.get(entity.partitionKey) ?? []), entity]);
  const batches: TableEntity[][] = [];
  for (const list of byPartition.values()) for (let i = 0; i < list.length; i += 100) batches.push(list.slice(i, i + 100));
  await runConcurrent(batches.length, concurrency, async (i) => {
    try {
      await client.submitTransaction(batches[i].map((entity): TransactionAction => ['create', entity]));
    } catch (error) {
      throw toDomainError(error, 'seed');
    }
  });
  return batches.length;
}

function int64(value: number): { value: string; type: 'Int64' } {
  return { value: String(Math.trunc(value)), type: 'Int64' };
}
