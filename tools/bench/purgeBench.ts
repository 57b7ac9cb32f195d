import { TableClient, type TableEntity, type TransactionAction } from '@azure/data-tables';
import { randomBytes } from 'node:crypto';
import { keyFromMessageId, toDomainError } from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import type { CountedTable } from './BenchTables';
import { RoundTripCounter } from './RoundTripCounter';
import { expiredRecord, insertInBatches, seedMarkerEntity } from './seedRecords';

export interface PurgeBenchOptions {
  /** Azurite (or storage) connection string; an http endpoint is allowed. */
  readonly connectionString: string;
  /** Expired records to write and delete. Default 10,000. */
  readonly records?: number;
  readonly partitionCount?: number;
}

/** One way of deleting `deleted` rows, measured. */
export interface PurgeMeasurement {
  readonly deleted: number;
  /** HTTP requests sent, counted by a pipeline policy (every attempt, retries included). */
  readonly roundTrips: number;
  readonly seconds: number;
  readonly perRoundTrip: number;
  readonly perSecond: number;
}

/** The sweep and, side by side, the raw floor: batch deletes of 100 with the keys known. */
export interface PurgeBenchResult extends PurgeMeasurement {
  readonly records: number;
  readonly partitions: number;
  readonly baseline: PurgeMeasurement;
}

/**
 * Purge benchmark: writes `records` expired records (not timed), measures the expiry sweep until done, then the same
 * rows deleted with plain batches of 100 (keys known, no query) as the baseline; on fresh tables, dropped afterwards.
 */
export async function purgeBench(options: PurgeBenchOptions): Promise<PurgeBenchResult> {
  const records = options.records ?? 10_000;
  const partitions = options.partitionCount ?? 16;
  const nowMs = Date.now();
  const entities = Array.from({ length: records }, (_, i) => seedMarkerEntity(expiredRecord(keyFromMessageId('bench', `m-${i}`), nowMs), partitions));

  const sweepTable = await tableFor(options.connectionString);
  let sweep: PurgeMeasurement;
  try {
    await insertInBatches(sweepTable.client, entities);
    const sweeper = new ExpirySweeper(sweepTable.client, { partitionCount: partitions, budgetMs: 3_600_000 });
    sweep = await measure(sweepTable, async () => {
      let deleted = 0;
      for (;;) {
        const report = await sweeper.sweep();
        deleted += report.deleted;
        if (!report.stoppedByBudget) return deleted;
      }
    });
  } finally {
    await drop(sweepTable.client);
  }

  const rawTable = await tableFor(options.connectionString);
  let baseline: PurgeMeasurement;
  try {
    await insertInBatches(rawTable.client, entities);
    baseline = await measure(rawTable, () => deleteInBatches(rawTable.client, entities));
  } finally {
    await drop(rawTable.client);
  }
  return { records, partitions, ...sweep, baseline };
}

async function tableFor(connectionString: string): Promise<CountedTable> {
  const client = TableClient.fromConnectionString(connectionString, `purge${randomBytes(6).toString('hex')}`, {
    allowInsecureConnection: /TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString),
  });
  try {
    await client.createTable();
  } catch (error) {
    throw toDomainError(error, 'createTable');
  }
  return { client, counter: RoundTripCounter.attach(client) };
}

async function measure(table: CountedTable, run: () => Promise<number>): Promise<PurgeMeasurement> {
  const before = table.counter.count;
  const started = process.hrtime.bigint();
  const deleted = await run();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const roundTrips = table.counter.count - before;
  return { deleted, roundTrips, seconds, perRoundTrip: roundTrips ? deleted / roundTrips : 0, perSecond: seconds ? deleted / seconds : 0 };
}

/** Plain batch deletes of 100 per partition, one at a time (as the sweep sends them). */
async function deleteInBatches(client: TableClient, entities: readonly TableEntity[]): Promise<number> {
  const byPartition = new Map<string, TableEntity[]>();
  for (const e of entities) byPartition.set(e.partitionKey, [...(byPartition.get(e.partitionKey) ?? []), e]);
  let deleted = 0;
  for (const list of byPartition.values()) {
    for (let i = 0; i < list.length; i += 100) {
      const chunk = list.slice(i, i + 100);
      try {
        await client.submitTransaction(chunk.map((e): TransactionAction => ['delete', { partitionKey: e.partitionKey, rowKey: e.rowKey }]));
      } catch (error) {
        throw toDomainError(error, 'baselineDelete');
      }
      deleted += chunk.length;
    }
  }
  return deleted;
}

async function drop(client: TableClient): Promise<void> {
  await client.deleteTable().catch(() => undefined);
}
