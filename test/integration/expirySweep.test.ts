import { TableClient, type TableEntity } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import {
  ConfigurationError,
  deleteRowsIfUnchanged,
  keyFromMessageId,
  payloadDigest,
  RecordStatus,
  SWEEP_STATE_PARTITION,
  TableIdempotencyStore,
  type Clock,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { loadSettings } from '../../src/config/settings';
import { ExpirySweeper, type SweepReport } from 'azure-functions-idempotency/table';
import { expiredRecord, insertInBatches, seedMarkerEntity, type SeedRecord } from '../../tools/bench/seedRecords';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

const DAY_MS = 86_400_000;
const NOW_MS = 1_800_000_000_000;
const azuriteOf = useAzurite();

/** Counts every HTTP request the client sends (after the SDK's retries: each attempt once). */
function countRequests(client: TableClient): { readonly count: number } {
  const counter = { count: 0 };
  client.pipeline.addPolicy({ name: 'countRequests', sendRequest: (request, next) => (counter.count++, next(request)) }, { afterPhase: 'Retry' });
  return counter;
}

async function allRows(client: TableClient): Promise<Map<string, TableEntity>> {
  const rows = new Map<string, TableEntity>();
  for await (const entity of client.listEntities()) rows.set(`${entity.partitionKey}/${entity.rowKey}`, entity as TableEntity);
  return rows;
}

/** Another client (another process, in effect) on the same table. */
const secondClient = (client: TableClient): TableClient =>
  TableClient.fromConnectionString(azuriteOf().connectionString, client.tableName, { allowInsecureConnection: true });

const keyOf = (i: number, consumer = 'payments'): IdempotencyKey => keyFromMessageId(consumer, `msg-${i}`);
const id = (e: TableEntity): string => `${e.partitionKey}/${e.rowKey}`;

/** A clock that moves `stepMs` forward on every reading: a sweep sees its budget run out. */
class SteppingClock implements Clock {
  constructor(
    public now: number,
    private readonly stepMs: number,
  ) {}
  nowMs(): number {
    const now = this.now;
    this.now += this.stepMs;
    return now;
  }
}

describe('ExpirySweeper on Azurite', () => {
  test('sweep: of 10,000 records over 16 partitions exactly the expired records go, with the local rows they list; live, leased, unlisted and checkpoint rows stay', async () => {
    const client = await freshTable(azuriteOf());
    const requests = countRequests(client);
    const clock = new FakeClock(NOW_MS);

    // Through the store API: 40 commits with a local effect, 20 of them expired since.
    const oldClock = new FakeClock(NOW_MS - 2 * DAY_MS);
    const oldStore = new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock: oldClock });
    const liveStore = new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock });
    const expected = new Set<string>();
    const survivors = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const store = i < 20 ? oldStore : liveStore;
      const key = keyOf(i, 'api');
      await store.commit(key, payloadDigest({ i }), { i }, [{ name: 'payment', properties: { amount: i } }]);
      const a = store.addressOf(key);
      (i < 20 ? expected : survivors).add(`${a.partitionKey}/${a.rowKey}`);
      (i < 20 ? expected : survivors).add(`${a.partitionKey}/${a.rowKey}~payment`); // listed on its marker: goes with it
    }
    // Claimed long ago with a lease that lapsed: expired too.
    const abandoned = keyOf(99, 'api');
    await oldStore.claim(abandoned, payloadDigest('x'));
    expected.add(`${oldStore.addressOf(abandoned).partitionKey}/${oldStore.addressOf(abandoned).rowKey}`);

    // In bulk, the same entity shape: 10,000 records of six kinds, and 500 effect rows.
    const seeds: Array<{ record: SeedRecord; expired: boolean; leased?: boolean }> = [];
    for (let i = 0; i < 10_000; i++) {
      const key = keyOf(i);
      switch (i % 6) {
        case 0:
          seeds.push({ record: expiredRecord(key, NOW_MS), expired: true });
          break;
        case 1:
          seeds.push({ record: { ...expiredRecord(key, NOW_MS), retentionExpiresAtMs: NOW_MS + DAY_MS }, expired: false });
          break;
        case 2:
          seeds.push({
            record: { ...expiredRecord(key, NOW_MS), status: RecordStatus.InProgress, leaseExpiresAtMs: NOW_MS + 60_000 },
            expired: false,
            leased: true,
          });
          break;
        case 3:
          seeds.push({ record: { ...expiredRecord(key, NOW_MS), status: RecordStatus.InProgress, leaseExpiresAtMs: NOW_MS - 1 }, expired: true });
          break;
        case 4:
          seeds.push({ record: { ...expiredRecord(key, NOW_MS), status: RecordStatus.Released }, expired: true });
          break;
        default:
          seeds.push({ record: expiredRecord(key, NOW_MS, 0), expired: true }); // retention ends exactly now
      }
    }
    const entities = seeds.map((s) => seedMarkerEntity(s.record));
    const effects: TableEntity[] = [];
    entities.forEach((e, i) => {
      (seeds[i].expired ? expected : survivors).add(id(e));
      if (i % 20 === 0) effects.push({ partitionKey: e.partitionKey, rowKey: `${e.rowKey}~payment`, kind: 'payment', amount: i });
    });
    effects.forEach((e) => survivors.add(id(e)));
    await insertInBatches(client, [...entities, ...effects]);
    expect(new Set(entities.map((e) => e.partitionKey)).size).toBe(16);

    const sweeper = new ExpirySweeper(client, { budgetMs: 600_000, clock });
    const before = requests.count;
    const report = await sweeper.sweep();
    const leased = seeds.filter((s) => s.leased).length;
    const expectedMarkers = [...expected].filter((k) => !k.endsWith('~payment')).length;
    expect(report).toMatchObject({
      deleted: expectedMarkers,
      deletedLocalRows: 20,
      skipped: leased,
      skippedLeased: leased,
      scanned: expectedMarkers + leased,
      stoppedByBudget: false,
      partitionsCompleted: 16,
    });
    expect(report.requests).toBe(requests.count - before);

    const rows = await allRows(client);
    for (const key of expected) expect(rows.has(key)).toBe(false);
    const left = [...rows.keys()].filter((k) => !k.startsWith(`${SWEEP_STATE_PARTITION}/`));
    expect(new Set(left)).toEqual(survivors);
    expect(rows.has(`${SWEEP_STATE_PARTITION}/expiry`)).toBe(true);

    // Nothing left to delete: a second run only scans the leased ones.
    expect(await sweeper.sweep()).toMatchObject({ deleted: 0, scanned: leased, skippedLeased: leased });
  });

  test('conditional batch delete: one stale ETag fails the whole transaction and deletes nothing', async () => {
    const client = await freshTable(azuriteOf());
    const entities = [0, 1, 2].map((i) => ({ partitionKey: 'p000', rowKey: `r${i}`, kind: 'idempotency-marker', n: i }));
    await insertInBatches(client, entities);
    const read = await Promise.all(entities.map((e) => client.getEntity(e.partitionKey, e.rowKey)));
    await client.updateEntity({ partitionKey: 'p000', rowKey: 'r1', n: 10 }, 'Merge');
    const rows = read.map((e) => ({ partitionKey: e.partitionKey!, rowKey: e.rowKey!, etag: e.etag }));
    await expect(deleteRowsIfUnchanged(client, rows)).rejects.toMatchObject({ statusCode: 412 });
    expect((await allRows(client)).size).toBe(3);
    const fresh = await client.getEntity('p000', 'r1');
    await deleteRowsIfUnchanged(client, [rows[0], { ...rows[1], etag: fresh.etag }, rows[2]]);
    expect((await allRows(client)).size).toBe(0);
  });

  test('budget: an interrupted sweep resumes from its checkpoint and later runs finish the rest', async () => {
    const client = await freshTable(azuriteOf());
    const total = 3_000;
    const live = Array.from({ length: 500 }, (_, i) =>
      seedMarkerEntity({ ...expiredRecord(keyOf(100_000 + i), NOW_MS), retentionExpiresAtMs: NOW_MS + 10 * DAY_MS }),
    );
    await insertInBatches(client, [...Array.from({ length: total }, (_, i) => seedMarkerEntity(expiredRecord(keyOf(i), NOW_MS))), ...live]);
    // Every clock reading is 1 s later; the budget is 6 s: each run does a few chunks, then stops.
    const clock = new SteppingClock(NOW_MS, 1_000);
    const reports: SweepReport[] = [];
    for (let run = 0; run < 200; run++) {
      const report = await new ExpirySweeper(client, { budgetMs: 6_000, clock, pageSize: 500 }).sweep();
      reports.push(report);
      expect(report.deleted + report.partitionsCompleted).toBeGreaterThan(0); // every run makes progress
      if (!report.stoppedByBudget) break;
    }
    expect(reports.length).toBeGreaterThan(2);
    expect(reports[0].stoppedByBudget).toBe(true);
    expect(reports.some((r) => r.next.afterRowKey !== undefined)).toBe(true); // stopped mid-partition, resumed there
    expect(reports.reduce((sum, r) => sum + r.deleted, 0)).toBe(total);
    const rows = await allRows(client);
    expect(rows.size).toBe(live.length + 1); // live records and the checkpoint
  });

  test('overlap: a sweep that runs entirely inside another deletes each record once; neither surfaces an error', async () => {
    const client = await freshTable(azuriteOf());
    const total = 2_000;
    await insertInBatches(
      client,
      Array.from({ length: total }, (_, i) => seedMarkerEntity(expiredRecord(keyOf(i), NOW_MS))),
    );
    const clock = new FakeClock(NOW_MS);
    const second = new ExpirySweeper(secondClient(client), { budgetMs: 600_000, clock });
    let inner: SweepReport | undefined;
    client.pipeline.addPolicy({
      name: 'runSecondSweepBeforeFirstDelete',
      sendRequest: async (request, next) => {
        if (!inner && request.url.includes('$batch')) inner = await second.sweep();
        return next(request);
      },
    });
    const outer = await new ExpirySweeper(client, { budgetMs: 600_000, clock }).sweep();
    expect(inner).toBeDefined();
    expect(inner!.deleted + outer.deleted).toBe(total);
    expect(outer.alreadyDeleted).toBeGreaterThan(0);
    expect(outer.checkpointSaved).toBe(false); // the inner run moved the checkpoint first
    expect((await allRows(client)).size).toBe(1);
  });

  test('overlap: two concurrent sweeps of one table delete every expired record exactly once', async () => {
    const client = await freshTable(azuriteOf());
    const total = 2_000;
    await insertInBatches(
      client,
      Array.from({ length: total }, (_, i) => seedMarkerEntity(expiredRecord(keyOf(i), NOW_MS))),
    );
    const clientB = secondClient(client);
    const clock = new FakeClock(NOW_MS);
    const [a, b] = await Promise.all([
      new ExpirySweeper(client, { budgetMs: 600_000, clock }).sweep(),
      new ExpirySweeper(clientB, { budgetMs: 600_000, clock }).sweep(),
    ]);
    expect(a.deleted + b.deleted).toBe(total);
    expect(a.scanned + b.scanned).toBeGreaterThanOrEqual(total);
    expect((await allRows(client)).size).toBe(1);
  });

  test('race: a record re-claimed between the query and the delete is not deleted; the rest of its batch is', async () => {
    const client = await freshTable(azuriteOf());
    const clock = new FakeClock(NOW_MS);
    const digest = payloadDigest({ order: 1 });
    const records = Array.from({ length: 300 }, (_, i) => ({ ...expiredRecord(keyOf(i), NOW_MS), digest }));
    await insertInBatches(
      client,
      records.map((r) => seedMarkerEntity(r)),
    );
    const store = new TableIdempotencyStore(secondClient(client), {
      retentionMs: DAY_MS,
      clock,
    });
    const victim = keyOf(7);
    const address = store.addressOf(victim);
    let reclaimed = false;
    client.pipeline.addPolicy({
      name: 'reclaimBeforeDelete',
      sendRequest: async (request, next) => {
        if (!reclaimed && request.url.includes('$batch') && String(request.body).includes(address.rowKey)) {
          reclaimed = true;
          expect((await store.claim(victim, digest)).kind).toBe('reclaimed');
        }
        return next(request);
      },
    });
    const report = await new ExpirySweeper(client, { budgetMs: 600_000, clock }).sweep();
    expect(reclaimed).toBe(true);
    expect(report).toMatchObject({ deleted: 299, skippedChanged: 1, alreadyDeleted: 0 });
    expect(await store.get(victim)).toMatchObject({ status: RecordStatus.InProgress, attempt: 2 });
  });
});

describe('expiryTimer handler', () => {
  class CollectingReader extends MetricReader {
    protected override onForceFlush(): Promise<void> {
      return Promise.resolve();
    }
    protected override onShutdown(): Promise<void> {
      return Promise.resolve();
    }
  }

  test('sweeps the configured table, logs the counts and adds them to the purge counters', async () => {
    const client = await freshTable(azuriteOf());
    await insertInBatches(
      client,
      Array.from({ length: 250 }, (_, i) => seedMarkerEntity(expiredRecord(keyOf(i), NOW_MS))),
    );
    const reader = new CollectingReader();
    const provider = new MeterProvider({ readers: [reader] });
    const logs: string[] = [];
    const context = new InvocationContext({ invocationId: 'i1', functionName: 'expiryTimer', logHandler: (_level, ...args) => logs.push(args.join(' ')) });
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, IDEMPOTENCY_TABLE_NAME: client.tableName });
    const handler = expiryTimerFromSettings(settings, { meter: provider.getMeter('idempotent-consumer'), clock: new FakeClock(NOW_MS) });
    await handler({ isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } }, context);
    expect(logs.join('\n')).toMatch(/expiry sweep: scanned 250, deleted 250, skipped 0/);
    const { resourceMetrics } = await reader.collect();
    const metrics = new Map<string, MetricData>(resourceMetrics.scopeMetrics.flatMap((s) => s.metrics.map((m) => [m.descriptor.name, m] as const)));
    const sum = (name: string): number => (metrics.get(name)?.dataPoints ?? []).reduce((total, p) => total + Number(p.value), 0);
    expect(sum('idempotency.purge.deleted')).toBe(250);
    expect(sum('idempotency.purge.scanned')).toBe(250);
    expect(sum('idempotency.purge.skipped')).toBe(0);
    await provider.shutdown();
  });

  test('refuses to build the timer (at start, not per tick) when retention is shorter than the redelivery window', () => {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, IDEMPOTENCY_RETENTION_DAYS: '7' });
    expect(() => expiryTimerFromSettings(settings)).toThrow(ConfigurationError);
    expect(() => expiryTimerFromSettings(settings)).toThrow(/IDEMPOTENCY_RETENTION_DAYS/);
  });
});
