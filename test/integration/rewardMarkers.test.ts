import { InvocationContext } from '@azure/functions';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { rewardsFromSettings } from '../../src/app/rewards';
import { loadSettings } from '../../src/config/settings';
import { ConfigurationError, StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { assertMarkersOutliveReplay, sweepRewardMarkers, sweepFailureStrikes } from '../../src/lifecycle/rewardMarkers';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { useAzurite, freePort } from '../support/azurite';
import { tableLimitViolations } from '../support/tableLimits';
import { FakeClock, freshTable } from '../support/tables';
import { TableClient, type TransactionAction, RestError } from '@azure/data-tables';

const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();

const cloudEvent = (paymentId: string, customerId: string, amount = 1000) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id: `evt-${paymentId}`,
  data: { paymentId, customerId, amount, currency: 'EUR' },
});

/** The kinds of the rows the consumer writes per event and customer (not its bookkeeping: identity layout, sweep checkpoint). */
async function kinds(table: TableClient): Promise<string[]> {
  const found: string[] = [];
  for await (const row of table.listEntities<{ kind: string }>()) if (!['identity-layout', 'sweep-checkpoint'].includes(row.kind)) found.push(row.kind);
  return found.sort();
}

describe('rewards markers expire after what can replay them (the hub retention + 1 day), swept by the expiry timer', () => {
  test('start check: markers kept shorter than the hub retention + 1 day refuse to start the consumer; the Bicep default (7 + 1) passes', () => {
    expect(assertMarkersOutliveReplay({ REWARDS_EVENT_HUB_RETENTION_DAYS: 7, REWARDS_MARKER_RETENTION_DAYS: 8 })).toBe(8 * DAY_MS);
    const short = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, REWARDS_MARKER_RETENTION_DAYS: '7' });
    expect(() => rewardsFromSettings(short)).toThrow(ConfigurationError);
    expect(() => rewardsFromSettings(short)).toThrow(/REWARDS_MARKER_RETENTION_DAYS \(7 days\) is shorter .* raise it to at least 8/);
  });

  test('the sweep deletes marker and identity rows past retention, keeps balances and younger markers; a replay within retention still counts once', async () => {
    const table = await freshTable(azuriteOf(), 'rm');
    const clock = new FakeClock();
    const consumer = new RewardsConsumer({ ledger: new RewardsLedger(table, clock), parking: new ParkingStore(await freshTable(azuriteOf(), 'pk'), clock) });
    const old = [cloudEvent('o1', 'ann'), cloudEvent('o2', 'bo')];
    await consumer.handleBatch(old);
    clock.advance(5 * DAY_MS);
    const young = [cloudEvent('y1', 'ann')];
    await consumer.handleBatch(young);
    clock.advance(4 * DAY_MS); // the old ones are 9 days old, the young one 4
    expect(await kinds(table)).toEqual(['reward-balance', 'reward-balance', ...Array(3).fill('reward-event'), ...Array(3).fill('reward-identity')]);
    const run = await sweepRewardMarkers(table, { cutoffMs: clock.nowMs() - 8 * DAY_MS, budgetMs: 60_000, clock });
    expect(run).toMatchObject({ scanned: 4, deleted: 4, stoppedByBudget: false });
    expect(await kinds(table)).toEqual(['reward-balance', 'reward-balance', 'reward-event', 'reward-identity']);
    expect(await consumer.handleBatch(young)).toMatchObject({ applied: 0, duplicates: 1 }); // within retention: still a duplicate
    expect(await new RewardsLedger(table).balanceOf('ann')).toBe(20);
    expect(tableLimitViolations).toEqual([]);
  });

  test('the expiry timer runs it on each tick (one log line), within its budget', async () => {
    const rewards = await freshTable(azuriteOf(), 'rt');
    const idempotency = await freshTable(azuriteOf(), 'it');
    const clock = new FakeClock();
    const parked = await freshTable(azuriteOf(), 'pk');
    const consumer = new RewardsConsumer({ ledger: new RewardsLedger(rewards, clock), parking: new ParkingStore(parked, clock) });
    await consumer.handleBatch([cloudEvent('t1', 'cy'), cloudEvent('t2', 'cy')]);
    // Failure strikes beside the parked events: an old one of the rewards consumer (goes), one of another consumer's
    // partition (not this sweep's), and one struck within retention (stays).
    const strikes = new FailureStrikes(parked, clock);
    await strikes.record('rewards', 'p0@10', 'Error: old');
    await strikes.record('orders', 'p0@10', 'Error: old');
    clock.advance(8 * DAY_MS + 1);
    await strikes.record('rewards', 'p0@20', 'Error: young');
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      IDEMPOTENCY_TABLE_NAME: idempotency.tableName,
      REWARDS_TABLE_NAME: rewards.tableName,
      PARKED_TABLE_NAME: parked.tableName,
    });
    const logs: string[] = [];
    const context = new InvocationContext({ invocationId: 'i1', functionName: 'expiryTimer', logHandler: (_level, ...args) => logs.push(args.join(' ')) });
    await expiryTimerFromSettings(settings, { clock })(
      { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } },
      context,
    );
    expect(logs.join('\n')).toMatch(/rewards marker sweep: deleted 4 of 4 past retention/);
    expect(await kinds(rewards)).toEqual(['reward-balance']);
    expect(logs.join('\n')).toMatch(/rewards failure strikes sweep: deleted 1 of 1 past retention/);
    const left: string[] = [];
    for await (const row of parked.listEntities<{ signature: string }>()) left.push(`${row.partitionKey} ${row.signature}`);
    expect(left.sort()).toEqual(['strikes-orders Error: old', 'strikes-rewards Error: young']);
  });
});

/**
 * The rewards markers' sweep and the failure strikes' sweep on Azurite (the real Table API): which rows go (the bound
 * included), the transactions per partition, the checkpoint a budget-stopped run leaves and the next run resumes from,
 * what a missing table, a row deleted meanwhile and a store fault do, and the counts the expiry timer logs.
 */
describe('the rewards markers sweep: the rows, transactions, checkpoint and counts (Azurite)', () => {
  const azuriteOf = useAzurite();
  const DAY_MS = 86_400_000;
  const CHECKPOINT = { partitionKey: 'sweep-state', rowKey: 'reward-markers' };
  const int64 = (ms: number) => ({ value: String(ms), type: 'Int64' as const });

  /** A clock that moves `stepMs` each time it is read: a budget of n steps lets a run read it about n times. */
  class TickingClock extends FakeClock {
    constructor(
      now: number,
      private readonly stepMs: number,
    ) {
      super(now);
    }
    override nowMs(): number {
      this.now += this.stepMs;
      return this.now;
    }
  }

  async function seed(client: TableClient, partitionKey: string, count: number, kind: string, appliedAtMs: number, prefix = 'e'): Promise<void> {
    for (let i = 0; i < count; i += 100) {
      const actions = Array.from({ length: Math.min(100, count - i) }, (_, j): TransactionAction => [
        'create',
        { partitionKey, rowKey: `${prefix}-${String(i + j).padStart(5, '0')}`, kind, appliedAtMs: int64(appliedAtMs) },
      ]);
      await client.submitTransaction(actions);
    }
  }

  async function rowsOf(client: TableClient): Promise<string[]> {
    const rows: string[] = [];
    for await (const row of client.listEntities()) rows.push(`${row.partitionKey}/${row.rowKey}`);
    return rows.sort();
  }

  describe('sweepRewardMarkers on Azurite', () => {
    test('markers applied at or before the cutoff go (the bound included, a fractional cutoff taken down to the ms); younger ones, balances and other kinds stay', async () => {
      const table = await freshTable(azuriteOf(), 'rmm');
      const cutoff = 1_700_000_000_000;
      await seed(table, 'c-ann', 1, 'reward-event', cutoff, 'at');
      await seed(table, 'i-0', 1, 'reward-identity', cutoff - DAY_MS, 'old');
      await seed(table, 'c-ann', 1, 'reward-event', cutoff + 1, 'young');
      await seed(table, 'i-0', 1, 'reward-identity', cutoff + 1, 'young');
      await seed(table, 'c-ann', 1, 'reward-balance', cutoff - DAY_MS, 'balance');
      await seed(table, 'c-bo', 1, 'reward-other', cutoff - DAY_MS, 'other');
      const run = await sweepRewardMarkers(table, { cutoffMs: cutoff + 0.9, budgetMs: 60_000, clock: new FakeClock() });
      // One query page, one transaction per partition; no checkpoint written (the scan ended and did not resume).
      expect(run).toEqual({ scanned: 2, deleted: 2, requests: 3, stoppedByBudget: false, resumed: false });
      expect(await rowsOf(table)).toEqual(['c-ann/balance-00000', 'c-ann/young-00000', 'c-bo/other-00000', 'i-0/young-00000']);
    });

    test('a partition of 250 markers goes in transactions of at most 100; another partition in its own', async () => {
      const table = await freshTable(azuriteOf(), 'rmt');
      await seed(table, 'c-ann', 250, 'reward-event', 1_000);
      await seed(table, 'c-bo', 1, 'reward-event', 1_000);
      const batches: number[] = [];
      table.pipeline.addPolicy({
        name: 'countBatches',
        sendRequest: async (request, next) => {
          if (request.url.includes('$batch')) batches.push((String(request.body).match(/DELETE /g) ?? []).length);
          return next(request);
        },
      });
      const run = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      expect(run).toEqual({ scanned: 251, deleted: 251, requests: 5, stoppedByBudget: false, resumed: false });
      expect(batches).toEqual([100, 100, 50, 1]);
      expect(await rowsOf(table)).toEqual([]);
    });

    test('a run stopped by its budget saves the continuation; the next resumes from it, ends the scan and saves an empty one; the run after starts afresh', async () => {
      const table = await freshTable(azuriteOf(), 'rmc');
      await seed(table, 'c-ann', 1000, 'reward-event', 1_000);
      await seed(table, 'i-0', 5, 'reward-identity', 1_000);
      const clock = new TickingClock(1_800_000_000_000, 1_000);
      // Start 1 s, first check 2 s (1 s spent, under the budget), the page, the checkpoint's time 3 s, the next check 4 s (3 s spent): stop.
      const first = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 3_000, clock });
      expect(first).toEqual({ scanned: 1000, deleted: 1000, requests: 12, stoppedByBudget: true, resumed: false });
      const saved = await table.getEntity<{ continuationToken: string; savedAtMs: bigint | number; kind: string }>(CHECKPOINT.partitionKey, CHECKPOINT.rowKey, {
        disableTypeConversion: true,
      });
      expect(saved.kind).toEqual({ value: 'sweep-checkpoint', type: 'String' });
      expect(saved.savedAtMs).toEqual({ value: String(1_800_000_000_000 + 3_000), type: 'Int64' });
      expect((saved.continuationToken as unknown as { value: string }).value).not.toBe('');

      const second = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock });
      expect(second).toEqual({ scanned: 5, deleted: 5, requests: 3, stoppedByBudget: false, resumed: true });
      expect((await table.getEntity<{ continuationToken: string }>(CHECKPOINT.partitionKey, CHECKPOINT.rowKey)).continuationToken).toBe('');
      expect(await rowsOf(table)).toEqual([`${CHECKPOINT.partitionKey}/${CHECKPOINT.rowKey}`]);

      const third = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock });
      expect(third).toEqual({ scanned: 0, deleted: 0, requests: 1, stoppedByBudget: false, resumed: false });
    });

    test('a budget spent before the first page: nothing read, nothing written; the budget is checked at its bound', async () => {
      const table = await freshTable(azuriteOf(), 'rmb');
      await seed(table, 'c-ann', 3, 'reward-event', 1_000);
      const run = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 1_000, clock: new TickingClock(0, 1_000) });
      expect(run).toEqual({ scanned: 0, deleted: 0, requests: 0, stoppedByBudget: true, resumed: false });
      expect(await rowsOf(table)).toHaveLength(3);
    });

    test('a checkpoint whose continuation is not a string is no checkpoint: the scan starts at the first row', async () => {
      const table = await freshTable(azuriteOf(), 'rmn');
      await table.createEntity({ ...CHECKPOINT, kind: 'sweep-checkpoint', continuationToken: 42 });
      await seed(table, 'c-ann', 2, 'reward-event', 1_000);
      const run = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      expect(run).toEqual({ scanned: 2, deleted: 2, requests: 2, stoppedByBudget: false, resumed: false });
    });

    test('no rewards table (rewards not deployed): nothing to sweep, one query asked, no error', async () => {
      const missing = TableClient.fromConnectionString(azuriteOf().connectionString, `none${Date.now()}`, { allowInsecureConnection: true });
      expect(await sweepRewardMarkers(missing, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() })).toEqual({
        scanned: 0,
        deleted: 0,
        requests: 1,
        stoppedByBudget: false,
        resumed: false,
      });
    });

    test('a row deleted by another sweep meanwhile fails its transaction only (404): the other partitions go, the run goes on', async () => {
      const table = await freshTable(azuriteOf(), 'rmg');
      await seed(table, 'c-ann', 2, 'reward-event', 1_000);
      await seed(table, 'c-bo', 2, 'reward-event', 1_000);
      const other = TableClient.fromConnectionString(azuriteOf().connectionString, table.tableName, { allowInsecureConnection: true });
      let raced = false;
      table.pipeline.addPolicy({
        name: 'overlappingSweep',
        sendRequest: async (request, next) => {
          if (request.url.includes('$batch') && !raced) {
            raced = true;
            await other.deleteEntity('c-ann', 'e-00000');
          }
          return next(request);
        },
      });
      const run = await sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      expect(run).toEqual({ scanned: 4, deleted: 2, requests: 3, stoppedByBudget: false, resumed: false });
      expect(await rowsOf(table)).toEqual(['c-ann/e-00001']); // left for the next run
    });

    test('a store fault is the store error of the call that met it: the checkpoint read; the checkpoint write once the table is dropped under the run', async () => {
      const down = TableClient.fromConnectionString(
        `UseDevelopmentStorage=true;TableEndpoint=http://127.0.0.1:${await freePort()}/devstoreaccount1`,
        'rewards',
        {
          allowInsecureConnection: true,
          retryOptions: { maxRetries: 0 },
        },
      );
      const unreachable = sweepRewardMarkers(down, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      await expect(unreachable).rejects.toThrow(StoreUnavailableError);
      await expect(unreachable).rejects.toMatchObject({
        operation: 'readSweepCheckpoint',
        message: expect.stringMatching(/^table store unavailable during readSweepCheckpoint/),
      });

      // The table deleted under a run: the delete finds no table (404, skipped as a row gone), the checkpoint write is refused.
      const table = await freshTable(azuriteOf(), 'rmf');
      await seed(table, 'c-ann', 1001, 'reward-event', 1_000);
      const other = TableClient.fromConnectionString(azuriteOf().connectionString, table.tableName, { allowInsecureConnection: true });
      table.pipeline.addPolicy({
        name: 'tableDropped',
        sendRequest: async (request, next) => {
          if (request.url.includes('$batch')) await other.deleteTable();
          return next(request);
        },
      });
      const dropped = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      await expect(dropped).rejects.toThrow(StoreRequestError);
      await expect(dropped).rejects.toMatchObject({ operation: 'writeSweepCheckpoint', statusCode: 404 });
    });
  });

  describe('sweepFailureStrikes on Azurite', () => {
    test("one consumer's strikes last struck at or before the cutoff go (a quote in its partition escaped); others, and parked events, stay", async () => {
      const table = await freshTable(azuriteOf(), 'fs');
      const strike = (partitionKey: string, rowKey: string, lastAtMs: number) => table.createEntity({ partitionKey, rowKey, lastAtMs: int64(lastAtMs) });
      await strike("strikes-o'brien", 'a', 1_000);
      await strike("strikes-o'brien", 'b', 2_000);
      await strike("strikes-o'brien", 'c', 2_001);
      await strike('strikes-orders', 'a', 1_000);
      await table.createEntity({ partitionKey: 'parked', rowKey: 'a', lastAtMs: int64(1_000) });
      const run = await sweepFailureStrikes(table, "strikes-o'brien", { cutoffMs: 2_000.5, budgetMs: 60_000, clock: new FakeClock() });
      expect(run).toEqual({ scanned: 2, deleted: 2, requests: 2, stoppedByBudget: false, resumed: false });
      expect(await rowsOf(table)).toEqual(['parked/a', "strikes-o'brien/c", 'strikes-orders/a']);
    });

    test('no checkpoint: a run stopped by its budget writes no checkpoint row; a query fault is the store error of queryFailureStrikes', async () => {
      const table = await freshTable(azuriteOf(), 'fsc');
      for (let i = 0; i < 1001; i += 100)
        await table.submitTransaction(
          Array.from({ length: Math.min(100, 1001 - i) }, (_, j): TransactionAction => [
            'create',
            { partitionKey: 'strikes-rewards', rowKey: `r${i + j}`, lastAtMs: int64(1) },
          ]),
        );
      const clock = new TickingClock(0, 1_000);
      expect(await sweepFailureStrikes(table, 'strikes-rewards', { cutoffMs: 2, budgetMs: 1_500, clock })).toEqual({
        scanned: 1000,
        deleted: 1000,
        requests: 11,
        stoppedByBudget: true,
        resumed: false,
      });
      expect(await rowsOf(table)).toHaveLength(1);
      const down = TableClient.fromConnectionString(
        `UseDevelopmentStorage=true;TableEndpoint=http://127.0.0.1:${await freePort()}/devstoreaccount1`,
        'parked',
        {
          allowInsecureConnection: true,
          retryOptions: { maxRetries: 0 },
        },
      );
      await expect(sweepFailureStrikes(down, 'strikes-rewards', { cutoffMs: 2, budgetMs: 60_000, clock: new FakeClock() })).rejects.toMatchObject({
        operation: 'queryFailureStrikes',
      });
    });
  });
});

/** A request as the table client's pipeline policies see it. */
describe('the rewards markers sweep: each call met by a fault (Azurite)', () => {
  type PipelineRequest = Parameters<Parameters<TableClient['pipeline']['addPolicy']>[0]['sendRequest']>[0];

  /**
   * Each call of the rewards markers' sweep (src/lifecycle/rewardMarkers.ts) on Azurite, met by a fault or a request
   * that never answers: the run fails with the store error named after that call (what the expiry timer logs), a call
   * past its deadline is aborted (the SDK's request is cancelled, not left running), and a refused delete is never
   * taken for a row already gone.
   */
  const azuriteOf = useAzurite();
  const int64 = (ms: number) => ({ value: String(ms), type: 'Int64' as const });

  async function seed(client: TableClient, count: number): Promise<void> {
    for (let i = 0; i < count; i += 100) {
      const actions = Array.from({ length: Math.min(100, count - i) }, (_, j): TransactionAction => [
        'create',
        { partitionKey: 'c-ann', rowKey: `e-${String(i + j).padStart(5, '0')}`, kind: 'reward-event', appliedAtMs: int64(1_000) },
      ]);
      await client.submitTransaction(actions);
    }
  }

  async function countRows(client: TableClient): Promise<number> {
    let n = 0;
    for await (const row of client.listEntities()) if (row.partitionKey === 'c-ann') n++;
    return n;
  }

  type Matcher = (request: PipelineRequest) => boolean;
  const isCheckpointRead: Matcher = (r) => r.method === 'GET' && r.url.includes("PartitionKey='sweep-state'");
  const isCheckpointWrite: Matcher = (r) => r.method === 'PUT' && r.url.includes("PartitionKey='sweep-state'");
  const isBatch: Matcher = (r) => r.url.includes('$batch');

  /** The matching request never answers; `aborted()` says whether the caller cancelled it. */
  function hang(client: TableClient, matches: Matcher): { aborted: () => boolean } {
    let aborted = false;
    client.pipeline.addPolicy({
      name: 'hang',
      sendRequest: async (request, next) => {
        if (!matches(request)) return next(request);
        await new Promise<void>((resolve) => request.abortSignal?.addEventListener('abort', () => resolve()));
        aborted = true;
        throw new RestError('The operation was aborted.', { code: 'REQUEST_ABORTED' });
      },
    });
    return { aborted: () => aborted };
  }

  /** The matching request is answered by `statusCode` (a RestError as the SDK raises it). */
  function refuse(client: TableClient, matches: Matcher, statusCode: number): void {
    client.pipeline.addPolicy({
      name: 'refuse',
      sendRequest: async (request, next) => {
        if (matches(request)) throw new RestError(`injected ${statusCode}`, { statusCode, request });
        return next(request);
      },
    });
  }

  async function eventually(check: () => boolean): Promise<boolean> {
    for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
    return check();
  }

  describe('sweepRewardMarkers: each call met by a fault', () => {
    test('a delete refused with 503: the run fails as deleteRewardMarkers unavailable, the rows stay', async () => {
      const table = await freshTable(azuriteOf(), 'rmc');
      await seed(table, 3);
      refuse(table, isBatch, 503);
      const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      await expect(run).rejects.toThrow(StoreUnavailableError);
      await expect(run).rejects.toMatchObject({ operation: 'deleteRewardMarkers' });
      expect(await countRows(table)).toBe(3);
    });

    test('a delete refused with 403: a request error of deleteRewardMarkers, not a row already gone', async () => {
      const table = await freshTable(azuriteOf(), 'rmc');
      await seed(table, 2);
      refuse(table, isBatch, 403);
      const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
      await expect(run).rejects.toThrow(StoreRequestError);
      await expect(run).rejects.toMatchObject({ operation: 'deleteRewardMarkers', statusCode: 403 });
    });

    test('a checkpoint read that never answers: aborted at its deadline, the run fails as readSweepCheckpoint', async () => {
      const table = await freshTable(azuriteOf(), 'rmc');
      const request = hang(table, isCheckpointRead);
      const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock(), callTimeoutMs: 200 });
      await expect(run).rejects.toThrow(StoreUnavailableError);
      await expect(run).rejects.toMatchObject({ operation: 'readSweepCheckpoint' });
      expect(await eventually(request.aborted)).toBe(true);
    });

    test('a delete that never answers: aborted at its deadline, the run fails as deleteRewardMarkers', async () => {
      const table = await freshTable(azuriteOf(), 'rmc');
      await seed(table, 2);
      const request = hang(table, isBatch);
      const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock(), callTimeoutMs: 300 });
      await expect(run).rejects.toMatchObject({ operation: 'deleteRewardMarkers', message: expect.stringContaining('deleteRewardMarkers') });
      expect(await eventually(request.aborted)).toBe(true);
    });

    test('a checkpoint write that never answers (a scan of more than one page): aborted, the run fails as writeSweepCheckpoint', async () => {
      const table = await freshTable(azuriteOf(), 'rmc');
      await seed(table, 1001);
      const request = hang(table, isCheckpointWrite);
      const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 600_000, clock: new FakeClock(), callTimeoutMs: 2_000 });
      await expect(run).rejects.toMatchObject({ operation: 'writeSweepCheckpoint', message: expect.stringContaining('writeSweepCheckpoint') });
      expect(await eventually(request.aborted)).toBe(true);
    });
  });
});
