import { TableClient, type TableEntity, type TransactionAction } from '@azure/data-tables';
import { randomBytes } from 'node:crypto';
import { keyFromMessageId, toDomainError } from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
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
 * Purge benchmark: writes `records` expired records across the partitions (batched inserts, not
 * timed), runs the expiry sweep until done and measures it; then writes the same number again and
 * deletes them with plain batches of 100 (keys known, no query, unconditional) as the baseline.
 * Each run uses fresh tables, which it drops afterwards.
 *
 * @example
 * const r = await purgeBench({ connectionString: azurite.connectionString, records: 10_000 });
 * console.log(`${r.perRoundTrip.toFixed(1)} records/round trip, ${r.perSecond.toFixed(0)}/s (raw ${r.baseline.perSecond.toFixed(0)}/s)`);
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

interface CountedTable {
  readonly client: TableClient;
  readonly requests: { count: number };
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
  const requests = { count: 0 };
  client.pipeline.addPolicy({ name: 'purgeBenchRoundTrips', sendRequest: (request, next) => (requests.count++, next(request)) }, { afterPhase: 'Retry' });
  return { client, requests };
}

async function measure(table: CountedTable, run: () => Promise<number>): Promise<PurgeMeasurement> {
  const before = table.requests.count;
  const started = process.hrtime.bigint();
  const deleted = await run();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const roundTrips = table.requests.count - before;
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
