/**
 * The payments consumer's delivery (src/payments/PaymentsConsumer.ts), in memory, both designs (the Azurite integration
 * tests hold it end to end). Each test asserts what the
 * broker sees (the result, or the retry error), what the run is started with, what the record becomes, and the lines
 * and counts an operator reads.
 */
import { keyFromMessageId, LeaseLostError, payloadDigest, RecordStatus } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { chargeEntityKey, chargeInstanceId, type ChargeWorkflow, type WorkflowStatus } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { DEFAULT_PROVIDER, DEFAULT_RETRY_BUDGET, PaymentRetryError, PaymentsConsumer, type PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import type { ChargeResult } from '../../src/payments/schema';
import { inMemoryTelemetry } from '../support/telemetry';

const payment = { paymentId: 'pay-flow', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
const key = keyFromMessageId('payments', payment.paymentId);
const T0 = Date.UTC(2026, 0, 1);

/** A consumer on an in-memory store; the workflow answers `statuses` in turn (the last one repeats) and `starts`. */
function rig(options: { design?: PaymentsDesign; statuses?: WorkflowStatus[]; starts?: Array<'started' | 'running'>; waitBudgetMs?: number } = {}) {
  const time = { now: T0 };
  const clock = { nowMs: () => time.now };
  const store = new InMemoryIdempotencyStore({ clock, leaseMs: 30_000 });
  const statuses = [...(options.statuses ?? [{ state: 'none' }])];
  const starts = [...(options.starts ?? ['started'])];
  const started: Array<{ instanceId: string; input: ChargeOrchestrationInput }> = [];
  const sleeps: number[] = [];
  const parked: Array<{ reason: string; detail: string }> = [];
  const workflow: ChargeWorkflow = {
    status: async () => (statuses.length > 1 ? statuses.shift()! : statuses[0]),
    start: async (instanceId, input) => (started.push({ instanceId, input }), starts.length > 1 ? starts.shift()! : starts[0]),
  };
  const t = inMemoryTelemetry();
  const consumer = new PaymentsConsumer({
    store,
    parking: { park: async (p: { reason: string; detail: string }) => void parked.push({ reason: p.reason, detail: p.detail }) } as unknown as ParkingStore,
    telemetry: t.telemetry,
    clock,
    sleep: async (ms) => void (sleeps.push(ms), (time.now += ms)),
    waitBudgetMs: options.waitBudgetMs ?? 60_000,
    design: options.design,
  }).withWorkflow(workflow);
  const logs = () => t.logs().map((l) => [l.body, l.attributes.outcome, l.attributes.reason, l.attributes.attempt]);
  return { time, store, consumer, started, sleeps, parked, t, logs };
}

const claimEarlier = async (r: ReturnType<typeof rig>, body = payment) =>
  (await r.store.claim(keyFromMessageId('payments', body.paymentId), payloadDigest(body), { effects: [paymentRow(body, 'pending')] })) as {
    kind: 'claimed';
    claim: { recordId: string; createdAtMs: number; digest: string };
  };

describe('handoff (the default design)', () => {
  test('a first delivery is claimed and its run started with the claim, the default capability and budget; reported handedOff', async () => {
    const r = rig();
    const result = await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1, correlationId: 'corr-1' });
    const record = await r.store.get(key);
    const entityKey = chargeEntityKey(record!.recordId, record!.createdAtMs, record!.digest);
    expect(result).toEqual({ outcome: 'handedOff', instanceId: chargeInstanceId(entityKey), attempt: 1 });
    expect(r.started).toHaveLength(1);
    expect(r.started[0].input).toMatchObject({
      idempotencyKey: payment.paymentId,
      entityKey,
      digest: payloadDigest(payment),
      attempt: 1,
      payment,
      correlationId: 'corr-1',
      provider: { lookup: 'none', keyMemoryHours: 24 },
      keyAgeAtStartMs: 0,
      keyOriginMs: T0,
    });
    expect(r.started[0].input.handoff).toMatchObject({ retry: { budgetMs: 3_600_000, firstDelayMs: 5_000, maxDelayMs: 300_000 } });
    expect(DEFAULT_PROVIDER).toEqual({ lookup: 'none', keyMemoryHours: 24 });
    expect(DEFAULT_RETRY_BUDGET).toEqual({ budgetMs: 3_600_000, firstDelayMs: 5_000, maxDelayMs: 300_000 });
    expect(r.logs()).toEqual([['payments: handedOff (handed-off)', 'handedOff', 'handed-off', 1]]);
    expect(await r.store.readLocalRow(key, 'payment')).toMatchObject({ paymentId: payment.paymentId, state: 'pending' });
    await r.t.shutdown();
  });

  test('a redelivery of a lapsed record whose run is not found: answered inProgress once, then taken over (attempt 2), its key age carried', async () => {
    const r = rig({ statuses: [{ state: 'none' }] });
    await claimEarlier(r);
    r.time.now += 45_000; // past the 30 s lease
    const result = await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 2 });
    expect(result).toMatchObject({ outcome: 'handedOff', attempt: 2 });
    expect(r.started.map((s) => [s.input.attempt, s.input.keyAgeAtStartMs, s.input.keyOriginMs])).toEqual([[2, r.time.now - T0, T0]]);
    expect(r.sleeps).toEqual([1]); // the lease has lapsed: the shortest wait, then the takeover
    expect(r.logs()).toEqual([
      ['payments: inProgress', 'inProgress', undefined, 1],
      ['payments: reclaimed (handed-off)', 'reclaimed', 'handed-off', 2],
    ]);
    expect(await r.t.counter('idempotency.takeovers', { consumer: 'payments' })).toBe(1);
    await r.t.shutdown();
  });

  test('a record in progress under a live lease, no run found: the delivery waits (bounded by the lease), then takes it over', async () => {
    const r = rig({ statuses: [{ state: 'none' }] });
    await claimEarlier(r);
    r.time.now += 29_990; // 10 ms of lease left
    const result = await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1 });
    expect(result).toMatchObject({ outcome: 'handedOff', attempt: 2 });
    // The first wait is the backoff's 25 ms cut to the lease's end (+1 ms), not the backoff.
    expect(r.sleeps[0]).toBe(11);
    await r.t.shutdown();
  });

  test('an older attempt’s run refuses our start: waited for (backoff, cut to the deadline), then redelivery asked for, the record ours', async () => {
    const r = rig({ statuses: [{ state: 'running' }], starts: ['running'], waitBudgetMs: 1_000 });
    await expect(r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1 })).rejects.toThrow(
      new PaymentRetryError(`payment ${payment.paymentId}: an older attempt's run is still going (attempt 1 waits for it); redeliver later`),
    );
    expect(r.sleeps).toEqual([25, 50, 100, 200, 400, 225]);
    expect(await r.store.get(key)).toMatchObject({ status: RecordStatus.InProgress, attempt: 1 });
    await r.t.shutdown();
  });
});

describe('hold (the charge awaited in the delivery)', () => {
  test('the run is started when none is found, polled with a doubling backoff until it completes; the record and Payment row are completed', async () => {
    const succeeded: ChargeResult = { status: 'succeeded', chargeId: 'ch-1', amount: 1250, currency: 'EUR' };
    const r = rig({ design: 'hold', statuses: [{ state: 'none' }, { state: 'none' }, { state: 'running' }, { state: 'completed', output: succeeded }] });
    const result = await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1 });
    expect(result).toEqual({ outcome: 'processed', result: succeeded });
    expect(r.started).toHaveLength(1);
    expect(r.started[0].input.handoff).toBeUndefined();
    expect(r.sleeps).toEqual([25, 50, 100]);
    expect(await r.store.get(key)).toMatchObject({ status: RecordStatus.Completed, result: succeeded });
    expect(await r.store.readLocalRow(key, 'payment')).toMatchObject({ state: 'succeeded', chargeId: 'ch-1' });
    expect(r.logs()).toEqual([['payments: processed (succeeded)', 'processed', 'succeeded', 1]]);
    await r.t.shutdown();
  });

  test('a run that already completed is not started again; a failed one is (a new run of the lifetime)', async () => {
    const done: ChargeResult = { status: 'declined', reason: 'card_declined' };
    const completed = rig({ design: 'hold', statuses: [{ state: 'completed', output: done }] });
    await expect(completed.consumer.handle(payment, { messageId: payment.paymentId })).resolves.toEqual({ outcome: 'processed', result: done });
    expect(completed.started).toEqual([]);
    const failed = rig({
      design: 'hold',
      statuses: [
        { state: 'failed', reason: 'boom' },
        { state: 'completed', output: done },
      ],
    });
    await expect(failed.consumer.handle(payment, { messageId: payment.paymentId })).resolves.toEqual({ outcome: 'processed', result: done });
    expect(failed.started).toHaveLength(1);
  });

  test('a run that fails releases the claim (the next delivery charges again) and asks for redelivery, naming why', async () => {
    const r = rig({ design: 'hold', statuses: [{ state: 'none' }, { state: 'failed', reason: 'orchestration failed: x' }] });
    const error = await r.consumer.handle(payment, { messageId: payment.paymentId }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentRetryError);
    expect((error as PaymentRetryError).message).toBe(`charge of payment ${payment.paymentId} failed transiently: orchestration failed: x`);
    expect((error as PaymentRetryError).retryable).toBe(true);
    expect(await r.store.get(key)).toMatchObject({ status: RecordStatus.Released });
  });

  test('a run still going at the deadline: redelivery asked for, the record left in progress', async () => {
    const r = rig({ design: 'hold', statuses: [{ state: 'running' }], waitBudgetMs: 100 });
    await expect(r.consumer.handle(payment, { messageId: payment.paymentId })).rejects.toThrow(
      `charge of payment ${payment.paymentId} did not finish within 100 ms; redeliver later`,
    );
    expect(r.sleeps).toEqual([25, 50, 25]);
    expect(await r.store.get(key)).toMatchObject({ status: RecordStatus.InProgress });
  });

  test('the provider refused the key with another body (our record had expired): processed, and the key-reuse alert raised', async () => {
    const rejected: ChargeResult = { status: 'rejected', code: 'idempotency-key-reused', reason: '422' };
    const r = rig({ design: 'hold', statuses: [{ state: 'completed', output: rejected }] });
    await expect(r.consumer.handle(payment, { messageId: payment.paymentId })).resolves.toEqual({ outcome: 'processed', result: rejected });
    expect(await r.t.counter('idempotency.key_reuse', { consumer: 'payments' })).toBe(1);
    expect(r.logs()).toContainEqual([
      `payments: key reused after expiry: the provider refused ${payment.paymentId} with another body (422)`,
      'providerKeyReused',
      'provider-key-reused',
      undefined,
    ]);
    const other = rig({ design: 'hold', statuses: [{ state: 'completed', output: { status: 'rejected', reason: '400' } }] });
    await other.consumer.handle(payment, { messageId: payment.paymentId });
    expect(await other.t.counter('idempotency.key_reuse', { consumer: 'payments' })).toBe(0);
  });

  test('a record in progress elsewhere: waited for until the deadline (one inProgress line), then redelivery asked for', async () => {
    const r = rig({ design: 'hold', waitBudgetMs: 4_000 });
    await claimEarlier(r);
    await expect(r.consumer.handle(payment, { messageId: payment.paymentId })).rejects.toThrow(
      `payment ${payment.paymentId} is in progress elsewhere (attempt 1); redeliver later`,
    );
    // 25 ms doubling to 1 s, the last wait cut to the deadline.
    expect(r.sleeps).toEqual([25, 50, 100, 200, 400, 800, 1_000, 1_000, 425]);
    expect(r.logs().filter((l) => l[1] === 'inProgress')).toHaveLength(1);
  });

  test('the claim lost to a takeover while waiting: the result is still returned (the other delivery completes from the same run)', async () => {
    const done: ChargeResult = { status: 'succeeded', chargeId: 'ch-2', amount: 1250, currency: 'EUR' };
    const r = rig({ design: 'hold', statuses: [{ state: 'completed', output: done }] });
    r.store.complete = async () => {
      throw new LeaseLostError('payments:pay-flow', 1, 'complete');
    };
    await expect(r.consumer.handle(payment, { messageId: payment.paymentId })).resolves.toEqual({ outcome: 'processed', result: done });
    r.store.complete = async () => {
      throw new Error('store broke');
    };
    await expect(r.consumer.handle({ ...payment, paymentId: 'pay-other' }, { messageId: 'pay-other' })).rejects.toThrow('store broke');
  });
});

test('without a clock or sleep given, the wait for a lease is a real one (a few store reads, not a busy loop)', async () => {
  const store = new InMemoryIdempotencyStore({ leaseMs: 120 });
  await store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  let claims = 0;
  const claim = store.claim.bind(store);
  store.claim = (...args) => (claims++, claim(...args));
  const workflow: ChargeWorkflow = { status: async () => ({ state: 'none' }), start: async () => 'started' };
  const consumer = new PaymentsConsumer({
    store,
    parking: { park: async () => undefined } as unknown as ParkingStore,
    telemetry: inMemoryTelemetry().telemetry,
    waitBudgetMs: 5_000,
  }).withWorkflow(workflow);
  await expect(consumer.handle(payment, { messageId: payment.paymentId })).resolves.toMatchObject({ outcome: 'handedOff', attempt: 2 });
  expect(claims).toBeLessThan(10);
});

describe('what needs no charge', () => {
  test('a duplicate of a completed payment: its stored result, reported with where it was found and its attempt', async () => {
    const r = rig({ design: 'hold', statuses: [{ state: 'completed', output: { status: 'succeeded', chargeId: 'ch-3', amount: 1250, currency: 'EUR' } }] });
    await r.consumer.handle(payment, { messageId: payment.paymentId });
    await expect(r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 2 })).resolves.toEqual({
      outcome: 'duplicate',
      result: { status: 'succeeded', chargeId: 'ch-3', amount: 1250, currency: 'EUR' },
    });
    expect(r.logs()[1]).toEqual(['payments: duplicate (completed)', 'duplicate', 'completed', 1]);
  });

  test('the same key with another body: parked as a key reuse naming both digests; nothing started', async () => {
    const r = rig();
    await claimEarlier(r);
    const other = { ...payment, amount: 999 };
    const detail = `MessageId ${payment.paymentId} was first used for a payload with digest ${payloadDigest(payment)}; this one has ${payloadDigest(other)}`;
    await expect(r.consumer.handle(other, { messageId: payment.paymentId })).resolves.toEqual({ outcome: 'keyReused', reason: detail });
    expect(r.parked).toEqual([{ reason: 'key-reused', detail }]);
    expect(r.started).toEqual([]);
  });

  test('a body that fails validation is parked with its reason and detail; nothing claimed', async () => {
    const r = rig();
    const result = await r.consumer.handle({ paymentId: payment.paymentId, amount: 'ten' }, { messageId: payment.paymentId });
    expect(result).toMatchObject({ outcome: 'parked' });
    expect((result as { reason: string }).reason).toBe(`${r.parked[0].reason}: ${r.parked[0].detail}`);
    expect(await r.store.get(key)).toBeUndefined();
  });

  test('without a workflow the consumer refuses to charge, saying how to give it one', async () => {
    const r = rig();
    const bare = new PaymentsConsumer({
      store: r.store,
      parking: { park: async () => undefined } as unknown as ParkingStore,
      telemetry: r.t.telemetry,
      waitBudgetMs: 1_000,
    });
    await expect(bare.handle(payment, { messageId: payment.paymentId })).rejects.toThrow('PaymentsConsumer has no charge workflow (use withWorkflow)');
  });
});
