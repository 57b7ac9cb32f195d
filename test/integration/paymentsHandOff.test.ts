/**
 * The handoff design (docs/DESIGN.md "Payments: hand off, don't hold") on the payments handler, the charge run by the
 * in-process executor (`durable: 'executor'`: the app's orchestration steps and activity bodies, handoff version 2 as
 * in Azure), Azurite and the fake provider: the delivery claims, starts the orchestration and is acknowledged without
 * a status poll; the run completes the record; duplicates of a started payment are acknowledged at once; crashes
 * between the steps lose nothing and charge once; an old attempt's record write never overwrites; a payment whose
 * transient failures outlast the budget ends `failed` with its reason, and the operator's retry charges it once.
 * The same protocol on the real engine: test/durable/realEngine.handoff.test.ts (also the operator's command over the
 * extension's HTTP API); the executor's agreement with it: test/durable/realEngine.differential.test.ts.
 */
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { LeaseLostError } from 'azure-functions-idempotency/internal';
import { completeRecord, type RecordedCharge } from '../../src/payments/completeRecord';
import { CallInFlightError, chargeProviderActivity, FenceUnreadableError } from '../../src/app/durableCharge';
import { CALL_LEASE_MS } from '../../src/payments/callFence';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import type { IdempotencyStore } from 'azure-functions-idempotency/internal';
import { chargeEntityKey } from '../../src/payments/ChargeWorkflow';
import type { ChargeResult } from '../../src/payments/schema';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import type { LocalChargeWorkflow } from '../../tools/local/LocalChargeWorkflow';
import { startPaymentsRig, type PaymentsRig } from '../../tools/local/paymentsRig';
import { retryFailedPayment, PaymentRetryRefusedError } from '../../src/app/paymentRetry';
import { consumerStoreFromSettings, storeFromSettings } from '../../src/app/stores';
import { loadSettings } from '../../src/config/settings';
import { useAzurite } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

const azuriteOf = useAzurite();
let provider: FakePaymentProvider;
let rig: PaymentsRig | undefined;

beforeEach(async () => {
  provider = await FakePaymentProvider.start();
});
afterEach(async () => {
  await rig?.workflow.stop?.();
  rig = undefined;
  await provider.stop();
});

const payment = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });
/** The message body as the trigger hands it to the handler (the worker has parsed the JSON text). */
const body = (id: string) => payment(id);

const RETRY = { budgetMs: 60_000, firstDelayMs: 200, maxDelayMs: 1_000, callLeaseMs: 1_500 };

async function handOffRig(options: { leaseMs?: number; budgetMs?: number; cacheSize?: number } = {}) {
  const recorded = inMemoryTelemetry();
  const r = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    design: 'handoff',
    telemetry: recorded.telemetry,
    restartDelayMs: 20,
    leaseMs: options.leaseMs ?? 5_000,
    retry: { ...RETRY, budgetMs: options.budgetMs ?? RETRY.budgetMs },
    cacheSize: options.cacheSize,
  });
  rig = r;
  // The trigger's Durable client calls, counted: starts and status reads.
  const clientCalls = { starts: 0, statusReads: 0 };
  const workflow = r.workflow as LocalChargeWorkflow;
  const start = workflow.start.bind(workflow);
  const status = workflow.status.bind(workflow);
  workflow.start = (...args) => (clientCalls.starts++, start(...args));
  workflow.status = (...args) => (clientCalls.statusReads++, status(...args));
  return { rig: r as Rig, clientCalls, recorded };
}
type Rig = PaymentsRig & { workflow: LocalChargeWorkflow };

/** The operator's retry (`npm run payments:retry`'s body) from its own process: a store client of its own, no cache. */
function operatorRetry(r: Rig, id: string) {
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    IDEMPOTENCY_TABLE_NAME: r.store.client.tableName,
    IDEMPOTENCY_CACHE_SIZE: '0',
  });
  const store = consumerStoreFromSettings(settings, {}, storeFromSettings(settings));
  return retryFailedPayment({ store, start: (instanceId, input) => r.workflow.start(instanceId, input), retry: RETRY }, id);
}

async function paymentRow(r: PaymentsRig, id: string): Promise<Record<string, unknown> | undefined> {
  const address = r.store.addressOf(keyFromMessageId('payments', id));
  return r.store.client.getEntity<Record<string, unknown>>(address.partitionKey, `${address.rowKey}~payment`).catch(() => undefined);
}

/** Redelivers like Service Bus while the handler throws (up to 10 deliveries, deliveryCount + 1 each). */
async function deliverUntilAcked(r: PaymentsRig, id: string, firstDeliveryCount = 1) {
  const errors: string[] = [];
  for (let deliveryCount = firstDeliveryCount; deliveryCount < firstDeliveryCount + 10; deliveryCount++) {
    try {
      return await r.deliver(body(id), { messageId: id, deliveryCount });
    } catch (error) {
      errors.push(String((error as Error).message));
    }
  }
  throw new Error(`not acknowledged after 10 deliveries: ${errors.join(' | ')}`);
}

describe('payments handoff on the in-process executor (Azurite, fake provider)', () => {
  test('a fresh payment: claimed, orchestration started, acknowledged with no status poll; the run completes the record and the Payment row; a duplicate gets the stored result', async () => {
    const { rig: r, clientCalls } = await handOffRig();
    const acked = await r.deliver(body('pay-h1'), { messageId: 'pay-h1', deliveryCount: 1 });
    expect(acked).toMatchObject({ outcome: 'handedOff', attempt: 1 });
    expect(clientCalls).toEqual({ starts: 1, statusReads: 0 });
    await r.workflow.drain();
    // Handoff version 2, as in Azure: the charge activity wrote the record (no separate record write).
    expect(r.workflow.counters).toMatchObject({ runs: 1, activityCalls: 1, recordCalls: 0, lostSignals: 0 });
    const record = await r.store.get(keyFromMessageId('payments', 'pay-h1'));
    expect(record).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'succeeded' } });
    const chargeId = (record!.result as Extract<ChargeResult, { status: 'succeeded' }>).chargeId;
    expect(await paymentRow(r, 'pay-h1')).toMatchObject({ state: 'succeeded', chargeId, amount: 1250 });
    expect(await r.deliver(body('pay-h1'), { messageId: 'pay-h1', deliveryCount: 2 })).toEqual({ outcome: 'duplicate', result: record!.result });
    expect(provider.chargesFor('pay-h1')).toBe(1);
  });

  test('a crash between the claim and the start: the message is not acknowledged; its redelivery takes the claim over after the lease, starts the run, and the payment is charged once', async () => {
    const { rig: r, clientCalls } = await handOffRig({ leaseMs: 1_500 });
    const claim = r.store.claim.bind(r.store);
    let crashed = false;
    r.store.claim = async (key, digest, options) => {
      const outcome = await claim(key, digest, options);
      if (!crashed && outcome.kind === 'claimed') {
        crashed = true;
        throw new Error('injected crash after the claim, before the start');
      }
      return outcome;
    };
    await expect(r.deliver(body('pay-h2'), { messageId: 'pay-h2', deliveryCount: 1 })).rejects.toThrow('injected crash');
    expect(clientCalls.starts).toBe(0);
    const acked = await deliverUntilAcked(r, 'pay-h2', 2);
    expect(acked).toMatchObject({ outcome: 'handedOff', attempt: 2 });
    await r.workflow.drain();
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h2'))).toMatchObject({ status: 'COMPLETED', attempt: 2, result: { status: 'succeeded' } });
    expect(await paymentRow(r, 'pay-h2')).toMatchObject({ state: 'succeeded' });
    expect(provider.chargesFor('pay-h2')).toBe(1);
  });

  test('a crash after the start, before the ack: the redelivery finds the record in progress and its orchestration started, and is acknowledged at once; one charge', async () => {
    const { rig: r } = await handOffRig();
    provider.setLatency(1_500); // the run is still charging when the redelivery comes
    expect(await r.deliver(body('pay-h3'), { messageId: 'pay-h3', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
    // The ack was lost: Service Bus delivers the message again.
    expect(await r.deliver(body('pay-h3'), { messageId: 'pay-h3', deliveryCount: 2 })).toMatchObject({ outcome: 'inProgress', attempt: 1 });
    await r.workflow.drain();
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h3'))).toMatchObject({ status: 'COMPLETED', attempt: 1 });
    expect(provider.chargesFor('pay-h3')).toBe(1);
  });

  test('concurrent duplicates: one delivery hands off, every other is acknowledged (in progress or duplicate); one start, one charge', async () => {
    const { rig: r, clientCalls } = await handOffRig();
    provider.setLatency(500);
    const results = await Promise.all(Array.from({ length: 6 }, () => deliverUntilAcked(r, 'pay-h4')));
    expect(results.filter((x) => x.outcome === 'handedOff')).toHaveLength(1);
    expect(results.every((x) => ['handedOff', 'inProgress', 'duplicate'].includes(x.outcome))).toBe(true);
    expect(clientCalls.starts).toBe(1);
    await r.workflow.drain();
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h4'))).toMatchObject({ status: 'COMPLETED', attempt: 1 });
    expect(provider.chargesFor('pay-h4')).toBe(1);
  });

  test('the chargeProvider activity with the claim (handoff version 2) charges, then writes the record once: completed, fenced for a taken-over claim, unwritten when the store does not answer (never thrown: no second provider call)', async () => {
    const { rig: r, recorded } = await handOffRig({ leaseMs: 300 });
    const digest = 'd'.repeat(64);
    const claimOf = async (id: string) => {
      const claimed = await r.store.claim(keyFromMessageId('payments', id), digest);
      if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
      return claimed.claim;
    };
    const down: IdempotencyStore = Object.assign(Object.create(r.store) as IdempotencyStore, {
      complete: () => Promise.reject(new StoreUnavailableError('ECONNREFUSED (the store is down)', 'complete')),
    });
    let store: IdempotencyStore = r.store;
    const activity = chargeProviderActivity(
      r.provider,
      () => recorded.telemetry,
      () => store,
    );
    const run = (id: string, claim: unknown) =>
      activity({ idempotencyKey: id, payment: payment(id), recordClaim: claim }, {} as never) as Promise<RecordedCharge>;

    const a = await run('pay-h8', await claimOf('pay-h8'));
    expect(a).toMatchObject({ result: { status: 'succeeded' }, record: 'completed' });
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h8'))).toMatchObject({ status: 'COMPLETED', result: a.result });
    expect(await paymentRow(r, 'pay-h8')).toMatchObject({ state: 'succeeded' });

    const old = await claimOf('pay-h9');
    await new Promise((resolve) => setTimeout(resolve, 400));
    const taken = await r.store.claim(keyFromMessageId('payments', 'pay-h9'), digest);
    expect(taken.kind).toBe('reclaimed');
    // The fence before the call: the record moved on (a takeover), so this old attempt's activity does not charge.
    expect(await run('pay-h9', old)).toMatchObject({
      result: { status: 'failed', reason: expect.stringMatching(/not charged: the record moved on \(IN_PROGRESS, attempt 2\)/) },
      record: 'fenced',
    });
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h9'))).toMatchObject({ status: 'IN_PROGRESS', attempt: 2 });

    store = down;
    expect(await run('pay-h10', await claimOf('pay-h10'))).toMatchObject({ result: { status: 'succeeded' }, record: 'unwritten' });
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h10'))).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });
    expect(recorded.logs().filter((l) => l.attributes.outcome === 'recordWriteRetry')).toHaveLength(1);
    expect([provider.chargesFor('pay-h8'), provider.chargesFor('pay-h9'), provider.chargesFor('pay-h10')]).toEqual([1, 0, 1]);
    // Without the claim it is the version 1 activity: the provider's answer alone, no record write.
    expect(await activity({ idempotencyKey: 'pay-h11', payment: payment('pay-h11') }, {} as never)).toMatchObject({ status: 'succeeded' });
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h11'))).toBeUndefined();
  });

  test('the fence is a condition (issue 51 items 1, 2): a store that refuses (403) calls nothing, fresh or stale; a call is announced on the record (its lease), and a settle neither looks up while it runs nor writes failed over it', async () => {
    const { rig: r, recorded } = await handOffRig({ leaseMs: 60_000 });
    const claimOf = async (id: string) => {
      const claimed = await r.store.claim(keyFromMessageId('payments', id), 'd'.repeat(64));
      if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
      return claimed.claim;
    };
    const forbidden: IdempotencyStore = Object.assign(Object.create(r.store) as IdempotencyStore, {
      get: () => Promise.reject(new StoreRequestError('table answered 403 AuthorizationPermissionMismatch', 'get', 403)),
    });
    let now = Date.now();
    const activityOn = (store: IdempotencyStore) =>
      chargeProviderActivity(
        r.provider,
        () => recorded.telemetry,
        () => store,
        () => now,
      );
    const run = (store: IdempotencyStore, id: string, claim: unknown, extra: object = {}) =>
      activityOn(store)({ idempotencyKey: id, payment: payment(id), recordClaim: claim, ...extra }, {} as never) as Promise<RecordedCharge>;
    // Unreadable: refused before the provider, retryable (the run schedules a fresh call); no window lets one through.
    await expect(run(forbidden, 'pay-f1', await claimOf('pay-f1'))).rejects.toThrow(FenceUnreadableError);
    expect(provider.chargesFor('pay-f1')).toBe(0);

    // A settle while a call's mark runs: CallInFlightError, nothing looked up, nothing written.
    const claim = await claimOf('pay-f2');
    const key = keyFromMessageId('payments', 'pay-f2');
    await r.store.renewLease(claim, CALL_LEASE_MS); // another execution of a round announced its call
    await expect(run(r.store, 'pay-f2', claim, { lookUpOnly: { failedReason: 'budget spent' } })).rejects.toThrow(CallInFlightError);
    expect((await r.store.get(key))?.status).toBe('IN_PROGRESS');
    // Past the lease the settle looks up: no charge, failed written on the version it read.
    now += CALL_LEASE_MS + 1_000;
    expect(await run(r.store, 'pay-f2', claim, { lookUpOnly: { failedReason: 'budget spent' } })).toMatchObject({
      result: { status: 'failed' },
      record: 'completed',
    });
    // A copy of a round after that: the record refuses its mark, nothing is charged, the record's answer returned.
    expect(await run(r.store, 'pay-f2', claim)).toMatchObject({ result: { status: 'failed' }, record: 'fenced' });
    expect(provider.chargesFor('pay-f2')).toBe(0);

    // A mark between the settle's read and its write (the race of item 2): the exact write is refused, the settle
    // answers CallInFlightError and the record stays open for the call's answer.
    const raced = await claimOf('pay-f3');
    const racedKey = keyFromMessageId('payments', 'pay-f3');
    const sneaky: IdempotencyStore = Object.assign(Object.create(r.store) as IdempotencyStore, {
      complete: async (...args: Parameters<IdempotencyStore['complete']>) => {
        await r.store.renewLease(raced, CALL_LEASE_MS); // the copy announces its call just before the failed write lands
        return r.store.complete(...args);
      },
    });
    await expect(run(sneaky, 'pay-f3', raced, { lookUpOnly: { failedReason: 'budget spent' } })).rejects.toThrow(CallInFlightError);
    expect((await r.store.get(racedKey))?.status).toBe('IN_PROGRESS');
  });

  test("takeover fencing: an old attempt's completeRecord never overwrites, before or after the new attempt completed the record", async () => {
    const { rig: r } = await handOffRig({ leaseMs: 300 });
    const key = keyFromMessageId('payments', 'pay-h5');
    const digest = 'd'.repeat(64);
    const first = await r.store.claim(key, digest);
    if (first.kind !== 'claimed') throw new Error(first.kind);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const second = await r.store.claim(key, digest);
    if (second.kind !== 'reclaimed') throw new Error(second.kind);
    const old: ChargeResult = { status: 'failed', reason: 'old attempt' };
    const fresh: ChargeResult = { status: 'succeeded', chargeId: 'ch_new', amount: 1250, currency: 'EUR' };
    expect(await completeRecord(r.store, { claim: first.claim, result: old, payment: payment('pay-h5') })).toBe('fenced');
    const held = await r.store.get(key);
    expect(held).toMatchObject({ status: 'IN_PROGRESS', attempt: 2, etag: second.claim.etag });
    expect(await completeRecord(r.store, { claim: second.claim, result: fresh, payment: payment('pay-h5') })).toBe('completed');
    const done = await r.store.get(key);
    expect(await completeRecord(r.store, { claim: first.claim, result: old, payment: payment('pay-h5') })).toBe('fenced');
    expect(await r.store.get(key)).toEqual(done);
    expect(done).toMatchObject({ status: 'COMPLETED', attempt: 2, result: fresh });
    // The control: the store itself refuses the old claim (what completeRecord turns into 'fenced').
    await expect(r.store.complete(first.claim, old)).rejects.toBeInstanceOf(LeaseLostError);
  });

  test('transient failures past the retry budget: held for an operator (no look-up: only the provider can say), the reason on entity, record and Payment row, counted; the operator retry charges it once', async () => {
    const { rig: r, recorded } = await handOffRig({ budgetMs: 1_500 });
    provider.setFaultRates({ error5xx: 1 });
    expect(await r.deliver(body('pay-h6'), { messageId: 'pay-h6', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
    await r.workflow.drain();
    const record = await r.store.get(keyFromMessageId('payments', 'pay-h6'));
    expect(record).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'failed', code: 'held-for-operator' } });
    const reason = (record!.result as { reason: string }).reason;
    expect(reason).toMatch(/^held for an operator: the retry budget is spent .*retry budget .*: .*(503|5\d\d)/);
    expect(await paymentRow(r, 'pay-h6')).toMatchObject({ state: 'failed', reason });
    const entityKey = chargeEntityKey(record!.recordId, record!.createdAtMs, record!.digest);
    const entity = await r.workflow.entityState(entityKey);
    expect(entity).toMatchObject({ status: 'failed', attempt: 1, reason });
    expect(await recorded.counter('payments.failed')).toBe(1);
    expect(provider.chargesFor('pay-h6')).toBe(0);
    // A duplicate is answered with the failure (acknowledged: nothing is lost, the record says what happened).
    expect(await r.deliver(body('pay-h6'), { messageId: 'pay-h6', deliveryCount: 2 })).toEqual({ outcome: 'duplicate', result: record!.result });

    // The operator's retry (the command's body; the command itself over the extension's HTTP API: realEngine.handoff).
    provider.setFaultRates({ error5xx: 0 });
    expect(await operatorRetry(r, 'pay-h6')).toMatchObject({
      attempt: 2,
      started: 'started',
      previous: expect.stringMatching(/^failed: held for an operator: the retry budget is spent/),
    });
    await r.workflow.drain();
    expect(await r.store.get(keyFromMessageId('payments', 'pay-h6'))).toMatchObject({ status: 'COMPLETED', attempt: 2, result: { status: 'succeeded' } });
    expect(await paymentRow(r, 'pay-h6')).toMatchObject({ state: 'succeeded' });
    expect(await r.workflow.entityState(entityKey)).toMatchObject({ status: 'completed', attempt: 2 });
    expect(provider.chargesFor('pay-h6')).toBe(1);
    // A payment that did not fail is never retried.
    await expect(operatorRetry(r, 'pay-h6')).rejects.toThrow(PaymentRetryRefusedError);
    await expect(operatorRetry(r, 'pay-h6')).rejects.toThrow(/did not fail \(succeeded\)/);
  });

  test("the completed-key cache never answers with a failed result the operator's retry reopened: a duplicate during the new run is in progress, after it succeeded", async () => {
    const { rig: r } = await handOffRig({ budgetMs: 1_500, cacheSize: 100 });
    const key = keyFromMessageId('payments', 'pay-h8');
    provider.setFaultRates({ error5xx: 1 });
    expect(await r.deliver(body('pay-h8'), { messageId: 'pay-h8', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
    await r.workflow.drain();
    const failed = await r.store.get(key);
    expect(failed).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'failed' } });
    // Duplicates of the failed payment, on this instance (its cache on): answered with the failure, from the table.
    expect(await r.deliver(body('pay-h8'), { messageId: 'pay-h8', deliveryCount: 2 })).toEqual({ outcome: 'duplicate', result: failed!.result });
    const again = await r.store.claim(key, failed!.digest);
    expect(again).toMatchObject({ kind: 'duplicate', cached: false, record: { result: { status: 'failed' } } });

    // The operator retries (its own process: the consumer's cache is not told); the provider answers slowly now.
    provider.setFaultRates({ error5xx: 0 });
    provider.setLatency(1_500);
    expect(await operatorRetry(r, 'pay-h8')).toMatchObject({ attempt: 2, started: 'started' });
    // A duplicate while the new run charges: in progress (attempt 2), never the old failure.
    expect(await r.deliver(body('pay-h8'), { messageId: 'pay-h8', deliveryCount: 3 })).toMatchObject({ outcome: 'inProgress', attempt: 2 });
    await r.workflow.drain();
    const charged = await r.store.get(key);
    expect(charged).toMatchObject({ status: 'COMPLETED', attempt: 2, result: { status: 'succeeded' } });
    // A succeeded result is final: cached as before (the second duplicate costs no round trip).
    expect(await r.deliver(body('pay-h8'), { messageId: 'pay-h8', deliveryCount: 4 })).toEqual({ outcome: 'duplicate', result: charged!.result });
    expect(await r.store.claim(key, charged!.digest)).toMatchObject({ kind: 'duplicate', cached: true });
    expect(provider.chargesFor('pay-h8')).toBe(1);
  });
});
