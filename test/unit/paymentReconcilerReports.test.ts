/**
 * The payments reconciler's pass (src/app/paymentReconciler.ts) as an operator sees it (paymentReconciler.test.ts
 * holds its decisions). The lines, counts and values an operator reads (their text, level and
 * attributes: the alerts filter on them), and the bounds of the budget and of a stuck run.
 */
import type { IdempotencyRecord } from 'azure-functions-idempotency/internal';
import { PaymentRetryRefusedError } from '../../src/app/paymentRetry';
import { RECONCILE_GRACE_MS, RUN_STUCK_AFTER_MS, reconcilePayments, type ReconcileDeps, type RunState } from '../../src/app/paymentReconciler';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import type { Telemetry } from '../../src/telemetry/Telemetry';

const NOW = 1_800_000_000_000;

const record = (key: string, fields: Partial<IdempotencyRecord> = {}): IdempotencyRecord => ({
  recordId: `r-${key}`,
  consumer: 'payments',
  key,
  status: 'IN_PROGRESS',
  digest: 'd'.repeat(64),
  result: undefined,
  attempt: 1,
  ownerId: 'o',
  leaseExpiresAtMs: NOW - RECONCILE_GRACE_MS - 1,
  retentionExpiresAtMs: NOW + 86_400_000,
  createdAtMs: NOW - 90 * 60_000,
  updatedAtMs: NOW - 90 * 60_000,
  localRows: ['payment'],
  etag: 'e',
  ...fields,
});
const instanceOf = (r: IdempotencyRecord) => chargeInstanceId(chargeEntityKey(r.recordId, r.createdAtMs, r.digest));

/** Telemetry that records every call: what reaches the metrics and the logs, as the exporters would get it. */
function recorded() {
  const calls: Array<[string, ...unknown[]]> = [];
  const telemetry = {
    count: (name: string, attributes: unknown) => void calls.push(['count', name, attributes]),
    record: (name: string, value: number, attributes: unknown) => void calls.push(['record', name, value, attributes]),
    log: (level: string, message: string, fields: unknown) => void calls.push(['log', level, message, fields]),
  } as unknown as Telemetry;
  return { telemetry, calls };
}

function deps(records: IdempotencyRecord[], runs: Record<string, RunState>, t: ReturnType<typeof recorded>, more: Partial<ReconcileDeps> = {}): ReconcileDeps {
  return {
    records: async function* () {
      yield* records;
    },
    runState: async (id) => runs[id] ?? 'missing',
    restart: async (r) => ({ attempt: r.attempt + 1 }),
    telemetry: t.telemetry,
    clock: { nowMs: () => NOW },
    budgetMs: 60_000,
    ...more,
  };
}

test('a restarted record: an error line naming the key, the reason and the new attempt, with the attributes the alert reads; the count by reason', async () => {
  const t = recorded();
  const r = record('pay-f', { attempt: 2 });
  await reconcilePayments(deps([r], { [instanceOf(r)]: 'failed' }, t));
  expect(t.calls).toEqual([
    ['count', 'payments.reconciled', { consumer: 'payments', reason: 'run-failed' }],
    [
      'log',
      'error',
      'payments: reconciled pay-f (run-failed): run restarted as attempt 3; its entity decides, never a blind charge',
      { consumer: 'payments', idempotencyKey: 'pay-f', reason: 'run-failed', outcome: 'reconciled', instanceId: instanceOf(r), attempt: 3, previousAttempt: 2 },
    ],
    ['record', 'payments.in_progress.oldest_minutes', 90, { consumer: 'payments' }],
  ]);
});

test('a superseded run: a warning that says it is not an incident', async () => {
  const t = recorded();
  const r = record('pay-s', { attempt: 2 });
  await reconcilePayments(deps([r], { [instanceOf(r)]: 'completed' }, t, { runAttempt: async () => 1 }));
  const line = t.calls.find((c) => c[0] === 'log')!;
  expect(line.slice(1, 3)).toEqual([
    'warn',
    "payments: reconciled pay-s (run-superseded): its run was started with an older attempt than the record's (a duplicate start dropped) and was fenced: not an incident; run restarted as attempt 3; its entity decides, never a blind charge",
  ]);
});

test('a refused restart: a warning naming the key, the reason and why, outcome reconcileRefused', async () => {
  const t = recorded();
  const r = record('pay-c');
  const restart = async () => {
    throw new PaymentRetryRefusedError('payment pay-c changed meanwhile');
  };
  await reconcilePayments(deps([r], { [instanceOf(r)]: 'terminated' }, t, { restart }));
  expect(t.calls.filter((c) => c[0] === 'log')).toEqual([
    [
      'log',
      'warn',
      'payments: reconciler left pay-c (run-terminated): payment pay-c changed meanwhile',
      { consumer: 'payments', idempotencyKey: 'pay-c', reason: 'run-terminated', outcome: 'reconcileRefused', instanceId: instanceOf(r) },
    ],
  ]);
});

test('a run stuck: alerted past RUN_STUCK_AFTER_MS (not at it), its minutes in the line, counted by its state', async () => {
  const t = recorded();
  const atBound = record('pay-at', { updatedAtMs: NOW - RUN_STUCK_AFTER_MS });
  const past = record('pay-past', { updatedAtMs: NOW - RUN_STUCK_AFTER_MS - 30 * 60_000 });
  const report = await reconcilePayments(deps([atBound, past], { [instanceOf(atBound)]: 'running', [instanceOf(past)]: 'suspended' }, t));
  expect(report).toMatchObject({ running: 2, stuck: 1 });
  expect(t.calls.filter((c) => c[0] !== 'record')).toEqual([
    ['count', 'payments.run_stuck', { consumer: 'payments', run: 'suspended' }],
    [
      'log',
      'error',
      'payments: pay-past in progress for 150 min, its run suspended: look at the run (resume it, or terminate it: the reconciler then takes it over)',
      { consumer: 'payments', idempotencyKey: 'pay-past', outcome: 'run-stuck', instanceId: instanceOf(past), reason: 'suspended' },
    ],
  ]);
});

test('the budget: spent at its deadline (not only past it); the pass says so in a count and a warning, and keeps the live runs found', async () => {
  const t = recorded();
  const kept: string[][] = [];
  const r = record('pay-1');
  const report = await reconcilePayments(
    deps([r], { [instanceOf(r)]: 'running' }, t, { budgetMs: 0, keepAlive: async (records) => void kept.push(records.map((x) => x.key)) }),
  );
  expect(report).toMatchObject({ scanned: 0, stoppedByBudget: true });
  expect(kept).toEqual([[]]);
  expect(t.calls).toEqual([
    ['record', 'payments.in_progress.oldest_minutes', 0, { consumer: 'payments' }],
    ['count', 'payments.reconciler.incomplete', { consumer: 'payments' }],
    [
      'log',
      'warn',
      'payments reconciler: budget spent after 0 record(s); the next tick goes on from there',
      { consumer: 'payments', outcome: 'reconcile-incomplete' },
    ],
  ]);
});

test('the constants an operator tunes alerts by: records are asked for once their lease lapsed 5 minutes ago; a run is stuck past 2 hours in progress', async () => {
  const t = recorded();
  const asked: number[] = [];
  const young = record('pay-young', { updatedAtMs: NOW - 119 * 60_000 });
  const old = record('pay-old', { updatedAtMs: NOW - 121 * 60_000 });
  const report = await reconcilePayments(
    deps([young, old], { [instanceOf(young)]: 'running', [instanceOf(old)]: 'running' }, t, {
      records: async function* (lapsedBeforeMs) {
        asked.push(lapsedBeforeMs);
        yield* [young, old];
      },
    }),
  );
  expect(asked).toEqual([NOW - 300_000]);
  expect(report).toMatchObject({ running: 2, stuck: 1 });
  expect(t.calls.filter((c) => c[0] === 'log').map((c) => (c[3] as { idempotencyKey: string }).idempotencyKey)).toEqual(['pay-old']);
});
