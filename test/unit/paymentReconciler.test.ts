import { PaymentRetryRefusedError } from '../../src/app/paymentRetry';
import {
  RECONCILE_GRACE_MS,
  ROUTINE_RECONCILE_REASONS,
  RUN_STUCK_AFTER_MS,
  reconcilePayments,
  reconcileReasonOf,
  type RunState,
} from '../../src/app/paymentReconciler';
import type { IdempotencyRecord } from 'azure-functions-idempotency/internal';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { inMemoryTelemetry } from '../support/telemetry';

const NOW = 1_800_000_000_000;

const record = (key: string, attempt = 1): IdempotencyRecord => ({
  recordId: `r-${key}`,
  consumer: 'payments',
  key,
  status: 'IN_PROGRESS',
  digest: 'd'.repeat(64),
  result: undefined,
  attempt,
  ownerId: 'o',
  leaseExpiresAtMs: NOW - RECONCILE_GRACE_MS - 1,
  retentionExpiresAtMs: NOW + 86_400_000,
  createdAtMs: 5,
  updatedAtMs: 5,
  localRows: ['payment'],
  etag: 'e',
});
const instanceOf = (r: IdempotencyRecord) => chargeInstanceId(chargeEntityKey(r.recordId, r.createdAtMs, r.digest));

async function* listOf(records: IdempotencyRecord[]): AsyncGenerator<IdempotencyRecord> {
  for (const r of records) yield r;
}

describe('payments reconciler', () => {
  test('reconcileReasonOf: a running run is left alone; failed, terminated, missing, and completed-with-the-record-open are resolved', () => {
    const states: RunState[] = ['running', 'failed', 'terminated', 'missing', 'completed'];
    expect(states.map(reconcileReasonOf)).toEqual([undefined, 'run-failed', 'run-terminated', 'run-missing', 'run-completed-record-open']);
  });

  test('each record past the grace whose run ended is restarted, counted by reason and logged with its key; running ones and refusals are not counted', async () => {
    const t = inMemoryTelemetry();
    const records = [record('pay-run'), record('pay-failed', 2), record('pay-term'), record('pay-gone'), record('pay-changed')];
    const runs: Record<string, RunState> = {
      [instanceOf(records[0])]: 'running',
      [instanceOf(records[1])]: 'failed',
      [instanceOf(records[2])]: 'terminated',
      [instanceOf(records[3])]: 'missing',
      [instanceOf(records[4])]: 'failed',
    };
    const asked: number[] = [];
    const restarted: string[] = [];
    const report = await reconcilePayments({
      records: (lapsedBeforeMs) => (asked.push(lapsedBeforeMs), listOf(records)),
      runState: async (id) => runs[id],
      restart: async ({ key: paymentId }) => {
        if (paymentId === 'pay-changed') throw new PaymentRetryRefusedError('payment pay-changed is in progress (its lease has not lapsed): not retried');
        restarted.push(paymentId);
        return { attempt: paymentId === 'pay-failed' ? 3 : 2 };
      },
      telemetry: t.telemetry,
      clock: { nowMs: () => NOW },
      budgetMs: 60_000,
    });
    expect(asked).toEqual([NOW - RECONCILE_GRACE_MS]);
    expect(restarted).toEqual(['pay-failed', 'pay-term', 'pay-gone']);
    expect(report).toEqual({
      scanned: 5,
      running: 1,
      stuck: 1, // the running one has been in progress for days: alerted (payments.run_stuck), left to its run
      refused: 1,
      stoppedByBudget: false,
      resolved: [
        { paymentId: 'pay-failed', reason: 'run-failed', attempt: 3 },
        { paymentId: 'pay-term', reason: 'run-terminated', attempt: 2 },
        { paymentId: 'pay-gone', reason: 'run-missing', attempt: 2 },
      ],
    });
    expect(await t.counter('payments.reconciled')).toBe(3);
    expect(await t.counter('payments.reconciled', { consumer: 'payments', reason: 'run-failed' })).toBe(1);
    const errors = t.logs().filter((l) => l.severity === 'ERROR');
    expect(errors.map((l) => [l.attributes.idempotencyKey, l.attributes.reason, l.attributes.attempt])).toEqual([
      ['pay-run', 'running', undefined], // in progress for days, its run still running: alerted (run-stuck), not taken over
      ['pay-failed', 'run-failed', 3],
      ['pay-term', 'run-terminated', 2],
      ['pay-gone', 'run-missing', 2],
    ]);
    expect(
      t
        .logs()
        .filter((l) => l.severity === 'WARN')
        .map((l) => l.attributes.idempotencyKey),
    ).toEqual(['pay-changed']);
    await t.shutdown();
  });

  test('a run still going is alerted once it has been in progress past RUN_STUCK_AFTER_MS (suspended too), never taken over', async () => {
    const t = inMemoryTelemetry();
    const fresh = { ...record('pay-fresh'), updatedAtMs: NOW - RUN_STUCK_AFTER_MS + 60_000 };
    const old = { ...record('pay-old'), updatedAtMs: NOW - RUN_STUCK_AFTER_MS - 60_000 };
    const suspended = { ...record('pay-suspended'), updatedAtMs: NOW - RUN_STUCK_AFTER_MS - 60_000 };
    const runs: Record<string, RunState> = { [instanceOf(fresh)]: 'running', [instanceOf(old)]: 'running', [instanceOf(suspended)]: 'suspended' };
    const restarted: string[] = [];
    const keptAlive: string[][] = [];
    const report = await reconcilePayments({
      records: () => listOf([fresh, old, suspended]),
      runState: async (id) => runs[id],
      restart: async (r) => (restarted.push(r.key), { attempt: 2 }),
      keepAlive: async (records) => void keptAlive.push(records.map((r) => r.key)),
      telemetry: t.telemetry,
      clock: { nowMs: () => NOW },
      budgetMs: 60_000,
    });
    expect(restarted).toEqual([]);
    // Their records are kept alive (retention moved on by the sweep's hold): a run still going keeps its record.
    expect(keptAlive).toEqual([['pay-fresh', 'pay-old', 'pay-suspended']]);
    expect(report).toMatchObject({ scanned: 3, running: 3, stuck: 2 });
    const stuck = t.logs().filter((l) => l.attributes.outcome === 'run-stuck');
    expect(stuck.map((l) => [l.attributes.idempotencyKey, l.attributes.reason])).toEqual([
      ['pay-old', 'running'],
      ['pay-suspended', 'suspended'],
    ]);
    expect(await t.counter('payments.run_stuck', { consumer: 'payments', run: 'suspended' })).toBe(1);
    await t.shutdown();
  });

  test('a completed run started with an older attempt than the record is run-superseded: restarted, counted, a warning not a page; the same attempt stays run-completed-record-open', async () => {
    const t = inMemoryTelemetry();
    const superseded = record('pay-superseded', 2);
    const own = record('pay-own', 2);
    const unknown = record('pay-unknown', 2);
    const attempts: Record<string, number | undefined> = { [instanceOf(superseded)]: 1, [instanceOf(own)]: 2, [instanceOf(unknown)]: undefined };
    const asked: string[] = [];
    const report = await reconcilePayments({
      records: () => listOf([superseded, own, unknown]),
      runState: async () => 'completed',
      runAttempt: async (id) => (asked.push(id), attempts[id]),
      restart: async () => ({ attempt: 3 }),
      telemetry: t.telemetry,
      clock: { nowMs: () => NOW },
      budgetMs: 60_000,
    });
    expect(asked).toHaveLength(3);
    expect(report.resolved.map((r) => [r.paymentId, r.reason])).toEqual([
      ['pay-superseded', 'run-superseded'],
      ['pay-own', 'run-completed-record-open'],
      ['pay-unknown', 'run-completed-record-open'], // the run's attempt not known: paged, as before
    ]);
    expect(ROUTINE_RECONCILE_REASONS.has('run-superseded')).toBe(true);
    expect(await t.counter('payments.reconciled', { consumer: 'payments', reason: 'run-superseded' })).toBe(1);
    const reconciled = t.logs().filter((l) => l.attributes.outcome === 'reconciled');
    expect(reconciled.map((l) => [l.attributes.idempotencyKey, l.severity])).toEqual([
      ['pay-superseded', 'WARN'],
      ['pay-own', 'ERROR'],
      ['pay-unknown', 'ERROR'],
    ]);
    await t.shutdown();
  });

  test('the run attempt is read only for a completed run (never for failed, terminated, missing or running ones)', async () => {
    const t = inMemoryTelemetry();
    const records = [record('a'), record('b'), record('c'), record('d')];
    const states: RunState[] = ['failed', 'terminated', 'missing', 'running'];
    const byInstance = new Map(records.map((r, i) => [instanceOf(r), states[i]]));
    let reads = 0;
    await reconcilePayments({
      records: () => listOf(records),
      runState: async (id) => byInstance.get(id)!,
      runAttempt: async () => (reads++, 0),
      restart: async () => ({ attempt: 2 }),
      telemetry: t.telemetry,
      clock: { nowMs: () => NOW },
      budgetMs: 60_000,
    });
    expect(reads).toBe(0);
    await t.shutdown();
  });

  test('each pass records the age in minutes of the oldest in-progress record it read (payments.in_progress.oldest_minutes), 0 when none; a pass stopped by its budget too', async () => {
    const t = inMemoryTelemetry();
    const old = { ...record('pay-old'), createdAtMs: NOW - 3 * 3_600_000 };
    const young = { ...record('pay-young'), createdAtMs: NOW - 30 * 60_000 };
    const base = {
      runState: async (): Promise<RunState> => 'running',
      restart: async () => ({ attempt: 2 }),
      telemetry: t.telemetry,
      clock: { nowMs: () => NOW },
    };
    await reconcilePayments({ ...base, records: () => listOf([young, old]), budgetMs: 60_000 });
    expect(await t.histogramCount('payments.in_progress.oldest_minutes')).toBe(1);
    expect(await t.histogramMax('payments.in_progress.oldest_minutes')).toBe(180);
    const none = inMemoryTelemetry();
    await reconcilePayments({ ...base, telemetry: none.telemetry, records: () => listOf([]), budgetMs: 60_000 });
    expect(await none.histogramMax('payments.in_progress.oldest_minutes')).toBe(0);
    // Stopped by its budget after the first record: what it read so far.
    const stopped = inMemoryTelemetry();
    let now = NOW;
    await reconcilePayments({
      ...base,
      telemetry: stopped.telemetry,
      runState: async () => ((now += 2_000), 'running'),
      clock: { nowMs: () => now },
      records: () => listOf([young, old]),
      budgetMs: 1_000,
    });
    expect(await stopped.histogramCount('payments.in_progress.oldest_minutes')).toBe(1);
    expect(await stopped.histogramMax('payments.in_progress.oldest_minutes')).toBe(30);
    for (const x of [t, none, stopped]) await x.shutdown();
  });

  test('a store or task hub error fails the pass (the tick fails; the next resumes); the budget stops it between records', async () => {
    const t = inMemoryTelemetry();
    const base = { telemetry: t.telemetry, restart: async () => ({ attempt: 2 }), records: () => listOf([record('a'), record('b'), record('c')]) };
    await expect(
      reconcilePayments({
        ...base,
        runState: async () => {
          throw new Error('HTTP 500');
        },
        clock: { nowMs: () => NOW },
        budgetMs: 1_000,
      }),
    ).rejects.toThrow('HTTP 500');
    let now = NOW;
    const report = await reconcilePayments({ ...base, runState: async () => ((now += 600), 'failed'), clock: { nowMs: () => now }, budgetMs: 1_000 });
    expect(report).toMatchObject({ scanned: 2, stoppedByBudget: true });
    expect(report.resolved).toHaveLength(2);
    // A pass stopped by its budget is a metric (an alert can see a reconciler that never finishes), not a log line only.
    expect(await t.counter('payments.reconciler.incomplete', { consumer: 'payments' })).toBe(1);
    await t.shutdown();
  });
});
