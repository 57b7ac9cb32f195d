/**
 * The payments parts of the expiry timer's tick as the app wires them (src/app/paymentsLifecycle.ts), in memory.
 * How a run's state in the task hub is read (and what the
 * reconciler makes of it), the attempt a completed run was started with, the purge's liveness check, and one
 * reconciler pass through the operator's retry path on the in-memory store.
 */
import type * as df from 'durable-functions';
import { keyFromMessageId, payloadDigest, type IdempotencyRecord } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { paymentsLifecycleFromSettings, reconcileOn, recordLiveIn, runAttemptOf, runStateOf } from '../../src/app/paymentsLifecycle';
import { TASK_HUB_CALL_TIMEOUT_MS } from '../../src/app/DurableChargeWorkflow';
import { loadSettings } from '../../src/config/settings';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { paymentRow } from '../../src/payments/paymentRow';
import { inMemoryTelemetry } from '../support/telemetry';

/** A client whose getStatus answers `answer` (an Error is thrown), recording the options of each read. */
function clientAnswering(answer: unknown) {
  const reads: Array<{ instanceId: string; options: unknown }> = [];
  const started: Array<{ name: string; options: { instanceId: string; input: ChargeOrchestrationInput } }> = [];
  const client = {
    getStatus: async (instanceId: string, options?: unknown) => {
      reads.push({ instanceId, options });
      if (answer instanceof Error) throw answer;
      return answer;
    },
    startNew: async (name: string, options: { instanceId: string; input: ChargeOrchestrationInput }) => (started.push({ name, options }), options.instanceId),
  } as unknown as df.DurableClient;
  return { client, reads, started };
}

const settings = (env: Record<string, string> = {}) =>
  loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENTS_DESIGN: 'handoff', ...env });

describe('runStateOf', () => {
  test.each([
    ['Completed', 'completed'],
    ['Failed', 'failed'],
    ['Suspended', 'suspended'],
    ['Terminated', 'terminated'],
    ['Canceled', 'terminated'],
    ['Running', 'running'],
    ['Pending', 'running'],
    ['ContinuedAsNew', 'running'],
  ])('a run %s in the task hub is %s, read without its input', async (runtimeStatus, state) => {
    const { client, reads } = clientAnswering({ runtimeStatus });
    await expect(runStateOf(client, 'payment-x')).resolves.toBe(state);
    expect(reads).toEqual([{ instanceId: 'payment-x', options: { showInput: false } }]);
  });

  test('a run the task hub does not know (404) is missing; any other error is the tick’s', async () => {
    await expect(runStateOf(clientAnswering(new Error('HTTP 404 Not Found')).client, 'payment-x')).resolves.toBe('missing');
    await expect(runStateOf(clientAnswering(new Error('HTTP 503 Service Unavailable')).client, 'payment-x')).rejects.toThrow('HTTP 503');
  });
});

describe('runAttemptOf', () => {
  test('the attempt of the run’s input, read with the input; undefined when gone, or the input has no numeric attempt', async () => {
    const read = clientAnswering({ runtimeStatus: 'Completed', input: { attempt: 3 } });
    await expect(runAttemptOf(read.client, 'payment-x')).resolves.toBe(3);
    expect(read.reads).toEqual([{ instanceId: 'payment-x', options: undefined }]);
    await expect(runAttemptOf(clientAnswering({ runtimeStatus: 'Completed', input: { attempt: '3' } }).client, 'p')).resolves.toBeUndefined();
    await expect(runAttemptOf(clientAnswering({ runtimeStatus: 'Completed' }).client, 'p')).resolves.toBeUndefined();
    await expect(runAttemptOf(clientAnswering(new Error('HTTP 404')).client, 'p')).resolves.toBeUndefined();
  });
});

describe('recordLiveIn', () => {
  test('live only for the record of that key and lifetime (its entity key); a missing record or another lifetime is not', async () => {
    const store = new InMemoryIdempotencyStore({ clock: { nowMs: () => 1_000 } });
    const claimed = await store.claim(keyFromMessageId('payments', 'pay-1'), 'd'.repeat(64));
    if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
    const entityKey = chargeEntityKey(claimed.claim.recordId, claimed.claim.createdAtMs, claimed.claim.digest);
    const live = recordLiveIn(store);
    await expect(live('pay-1', entityKey)).resolves.toBe(true);
    await expect(live('pay-1', `${entityKey}x`)).resolves.toBe(false);
    await expect(live('pay-2', entityKey)).resolves.toBe(false);
  });
});

describe('the reconciler as wired', () => {
  test('with PAYMENTS_DESIGN=hold it is skipped and says why', async () => {
    const t = inMemoryTelemetry();
    const lifecycle = paymentsLifecycleFromSettings(settings({ PAYMENTS_DESIGN: 'hold' }));
    await expect(lifecycle.reconcile(clientAnswering({ runtimeStatus: 'Failed' }).client, 60_000, t.telemetry)).resolves.toEqual({
      skipped: 'PAYMENTS_DESIGN=hold: the broker keeps each message until its charge is done',
    });
    await t.shutdown();
  });

  test('a record whose run failed is restarted through the retry path: a takeover as listed, the settings’ budget and capability, origin reconciler', async () => {
    const t = inMemoryTelemetry();
    let now = 1_800_000_000_000;
    const clock = { nowMs: () => now };
    const store = new InMemoryIdempotencyStore({ clock, leaseMs: 60_000 });
    const payment = { paymentId: 'pay-r', customerId: 'c-1', amount: 500, currency: 'EUR' };
    const key = keyFromMessageId('payments', payment.paymentId);
    await store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
    now += 20 * 60_000;
    const listed = (await store.get(key)) as IdempotencyRecord;
    const { client, started } = clientAnswering({ runtimeStatus: 'Failed' });
    const s = settings({ PAYMENT_RETRY_BUDGET_MINUTES: '30', PAYMENT_PROVIDER_LOOKUP: 'by-key', PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '48' });
    const kept: IdempotencyRecord[][] = [];
    const deadlines: number[] = [];
    const report = await reconcileOn({
      records: async function* () {
        yield listed;
      },
      client,
      store,
      settings: s,
      telemetry: t.telemetry,
      clock,
      budgetMs: 60_000,
      keepAlive: async (records) => void kept.push([...records]),
      // The task hub's deadline waits on the clock given (the simulator's), not a real timer.
      sleep: (ms) => (deadlines.push(ms), new Promise<void>(() => undefined)),
    });
    expect(deadlines).toEqual([TASK_HUB_CALL_TIMEOUT_MS]);
    expect(report).toMatchObject({ scanned: 1, running: 0, resolved: [{ paymentId: 'pay-r', reason: 'run-failed', attempt: 2 }], refused: 0 });
    expect(kept).toEqual([[]]);
    const instanceId = chargeInstanceId(chargeEntityKey(listed.recordId, listed.createdAtMs, listed.digest));
    expect(started).toHaveLength(1);
    expect(started[0].options.instanceId).toBe(instanceId);
    expect(started[0].options.input).toMatchObject({
      idempotencyKey: 'pay-r',
      attempt: 2,
      correlationId: 'reconciler-pay-r',
      provider: { lookup: 'by-key', keyMemoryHours: 48 },
      keyAgeAtStartMs: 20 * 60_000,
      keyOriginMs: listed.createdAtMs,
    });
    expect(started[0].options.input.handoff?.retry).toMatchObject({ budgetMs: 30 * 60_000 });
    expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2 });
    await t.shutdown();
  });

  test('a record that changed since it was listed is refused (counted, left alone); a completed run’s attempt below the record’s is run-superseded', async () => {
    const t = inMemoryTelemetry();
    const clock = { nowMs: () => 1_800_000_000_000 };
    const store = new InMemoryIdempotencyStore({ clock, leaseMs: 60_000 });
    const payment = { paymentId: 'pay-s', customerId: 'c-1', amount: 500, currency: 'EUR' };
    await store.claim(keyFromMessageId('payments', payment.paymentId), payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
    const listed = (await store.get(keyFromMessageId('payments', payment.paymentId))) as IdempotencyRecord;
    const { client, started } = clientAnswering({ runtimeStatus: 'Completed', input: { attempt: 0 } });
    const report = await reconcileOn({
      records: async function* () {
        yield { ...listed, etag: 'an older etag' };
      },
      client,
      store,
      settings: settings(),
      telemetry: t.telemetry,
      clock,
      budgetMs: 60_000,
      sleep: () => new Promise<void>(() => undefined),
    });
    expect(report).toMatchObject({ scanned: 1, resolved: [], refused: 1 });
    expect(started).toEqual([]);
    expect(t.logs().find((l) => l.attributes.outcome === 'reconcileRefused')?.attributes.reason).toBe('run-superseded');
    await t.shutdown();
  });
});
