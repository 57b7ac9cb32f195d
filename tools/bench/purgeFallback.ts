import { performance } from 'node:perf_hooks';
import type { TableClient, TableEntity, TransactionAction } from '@azure/data-tables';
import { allPartitions, DEFAULT_PARTITION_COUNT, keyFromMessageId, MARKER_KIND, RecordStatus, tableAddress } from '../../src/core';
import type { CountedTable } from './BenchTables';
import type { PurgeComparison, PurgeEnv, PurgeFigures } from './purgeSection';
import { runConcurrent } from './runConcurrent';

/** Rows per entity-group transaction (the service's limit). */
const BATCH = 100;
/** Largest page a Table query returns. */
const PAGE = 1000;

/**
 * A minimal stand-in for the expiry-sweep benchmark until tools/bench/purgeBench.ts (and the
 * project's sweeper) land: NOT the project's sweeper. It seeds `env.records` expired markers across
 * the 16 partitions, then sweeps them the way docs/DESIGN.md describes (per partition: query the
 * expired rows' keys, pages of up to 1,000; delete in transactions of 100), and compares with the
 * raw floor: the same number of rows deleted in transactions of 100 with the keys known (no query).
 * Seeding is not counted. Partitions are swept 4 at a time.
 */
export async function purgeFallback(env: PurgeEnv): Promise<PurgeComparison> {
  const nowMs = Date.now();
  const rows = seedRows(env.records, nowMs - 60_000);

  const sweepTable = await env.tables.create('psweep');
  await insert(sweepTable.client, rows);
  const sweep = await measure(sweepTable, () => sweepExpired(sweepTable.client, nowMs));

  const rawTable = await env.tables.create('praw');
  await insert(rawTable.client, rows);
  const raw = await measure(rawTable, async () => {
    let deleted = 0;
    await runConcurrent(DEFAULT_PARTITION_COUNT, 4, async (p) => {
      const partition = allPartitions(DEFAULT_PARTITION_COUNT)[p];
      const n = await deleteInBatches(rawTable.client, rows.filter((r) => r.partitionKey === partition));
      deleted += n; // not `deleted += await ...`: that reads `deleted` before the await and loses updates
    });
    return deleted;
  });
  if (sweep.deleted !== env.records || raw.deleted !== env.records) {
    throw new Error(`purge fallback deleted ${sweep.deleted} (sweep) and ${raw.deleted} (raw) of ${env.records} records`);
  }
  return { sweep, raw };
}

async function sweepExpired(client: TableClient, nowMs: number): Promise<number> {
  let deleted = 0;
  await runConcurrent(DEFAULT_PARTITION_COUNT, 4, async (p) => {
    const partition = allPartitions(DEFAULT_PARTITION_COUNT)[p];
    const filter = `PartitionKey eq '${partition}' and retentionExpiresAtMs lt ${Math.trunc(nowMs)}L`;
    const keys: TableEntity[] = [];
    for await (const page of client.listEntities({ queryOptions: { filter, select: ['RowKey'] } }).byPage({ maxPageSize: PAGE })) {
      for (const entity of page) keys.push({ partitionKey: partition, rowKey: entity.rowKey as string });
    }
    const n = await deleteInBatches(client, keys);
    deleted += n;
  });
  return deleted;
}

async function deleteInBatches(client: TableClient, rows: readonly TableEntity[]): Promise<number> {
  for (let i = 0; i < rows.length; i += BATCH) {
    await client.submitTransaction(rows.slice(i, i + BATCH).map((r): TransactionAction => ['delete', { partitionKey: r.partitionKey, rowKey: r.rowKey }]));
  }
  return rows.length;
}

async function measure(table: CountedTable, work: () => Promise<number>): Promise<PurgeFigures> {
  const before = table.counter.count;
  const started = performance.now();
  const deleted = await work();
  const seconds = (performance.now() - started) / 1000;
  const roundTrips = table.counter.count - before;
  return { deleted, roundTrips, seconds, perRoundTrip: deleted / roundTrips, perSecond: deleted / seconds };
}

function seedRows(count: number, retentionExpiresAtMs: number): TableEntity[] {
  return Array.from({ length: count }, (_, i) => {
    const key = keyFromMessageId('bench-purge', `m-${i}`);
    return {
      ...tableAddress(key, DEFAULT_PARTITION_COUNT),
      kind: MARKER_KIND,
      consumer: key.consumer,
      idempotencyKey: key.key,
      status: RecordStatus.Completed,
      retentionExpiresAtMs: { value: String(retentionExpiresAtMs), type: 'Int64' },
    };
  });
}

async function insert(client: TableClient, rows: readonly TableEntity[]): Promise<void> {
  await runConcurrent(DEFAULT_PARTITION_COUNT, 4, async (p) => {
    const partition = allPartitions(DEFAULT_PARTITION_COUNT)[p];
    const mine = rows.filter((r) => r.partitionKey === partition);
    for (let i = 0; i < mine.length; i += BATCH) {
      await client.submitTransaction(mine.slice(i, i + BATCH).map((r): TransactionAction => ['create', r]));
    }
  });
}
