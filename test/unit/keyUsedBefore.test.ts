/**
 * A record generation begun at attempt > 1 (an expired record claimed afresh: a payment id reused by a producer, an
 * operator's retry of a record past its retention) relies on no key memory: an earlier generation used the key at some
 * time before this generation's origin, which therefore says nothing about the key's age at the provider. Its first
 * call is uncertain: looked up first, or held where there is no look-up. A lapsed claim taken over within one
 * generation keeps its origin (the key was first used after it).
 */
import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { retryFailedPayment } from '../../src/app/paymentRetry';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { DEFAULT_RETRY_BUDGET, PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { providerCall } from '../../src/payments/providerRounds';
import { inMemoryTelemetry } from '../support/telemetry';

const payment = { paymentId: 'pay-reuse', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
const key = keyFromMessageId('payments', payment.paymentId);
const RETENTION_MS = 2 * 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

function rig() {
  const time = { now: T0 };
  const clock = { nowMs: () => time.now };
  const store = new InMemoryIdempotencyStore({ clock, leaseMs: 30_000, retentionMs: RETENTION_MS });
  const started: ChargeOrchestrationInput[] = [];
  const workflow: ChargeWorkflow = { status: async () => ({ state: 'none' }), start: async (_id, input) => (started.push(input), 'started') };
  const t = inMemoryTelemetry();
  const consumer = new PaymentsConsumer({
    store,
    parking: { park: async () => undefined } as unknown as ParkingStore,
    telemetry: t.telemetry,
    clock,
    sleep: async (ms) => void (time.now += ms),
    waitBudgetMs: 60_000,
  }).withWorkflow(workflow);
  return { time, store, consumer, started, t };
}

/** The first provider call the run would make, with the capability it was started with. */
const firstCall = (input: ChargeOrchestrationInput, nowMs: number) => providerCall(input, 0, false, 0, nowMs);

describe('a generation begun after an earlier one used the key relies on no key memory', () => {
  test('an expired record claimed afresh (attempt 2, a new generation): its first call looks up or holds, never a blind charge', async () => {
    const r = rig();
    await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1 });
    // The first generation's run completes the record (as the charge activity does), with the claim it started with.
    const handoff = r.started[0].handoff!;
    await r.store.complete(handoff.claim, { status: 'succeeded', chargeId: 'ch_old', amount: 1250, currency: 'EUR' });
    r.time.now += RETENTION_MS + 60_000; // past its retention, not yet swept
    await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1 });
    expect(r.started).toHaveLength(2);
    const [fresh, reused] = r.started;
    expect(fresh.keyUsedBefore).toBeUndefined();
    expect(reused).toMatchObject({ attempt: 2, keyUsedBefore: true });
    // Stripe-like (no look-up): held for an operator; a by-key provider: looked up first. The key's origin is this
    // generation's creation, a minute ago: trusting it would replay or repeat a key the provider may hold for another payment.
    expect(firstCall(reused, r.time.now).hold).toMatch(/cannot be checked/);
    expect(firstCall({ ...reused, provider: { lookup: 'by-key', keyMemoryHours: 24 } }, r.time.now).lookUpFirst).toBe(true);
    // The first generation's first call charged as ever (nothing used the key before it).
    expect(firstCall(fresh, T0)).not.toHaveProperty('lookUpFirst');
    expect(firstCall(fresh, T0)).not.toHaveProperty('hold');
    await r.t.shutdown();
  });

  test('a lapsed claim taken over within its generation keeps its origin (no look-up for a young key)', async () => {
    const r = rig();
    await r.store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
    r.time.now += 31_000; // the lease lapsed: the next delivery takes the record over (attempt 2, same generation)
    await r.consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 2 });
    expect(r.started).toHaveLength(1);
    expect(r.started[0]).toMatchObject({ attempt: 2 });
    expect(r.started[0].keyUsedBefore).toBeUndefined();
    await r.t.shutdown();
  });

  test("an operator's retry of a failed record past its retention keeps the generation's origin: its first call is held", async () => {
    const r = rig();
    const outcome = await r.store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
    if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
    await r.store.complete(outcome.claim, { status: 'failed', reason: 'budget spent' }, [paymentRow(payment, 'failed')]);
    r.time.now += RETENTION_MS + 60_000;
    const starts: ChargeOrchestrationInput[] = [];
    await retryFailedPayment(
      {
        store: r.store,
        start: async (_id, input) => (starts.push(input), 'started'),
        retry: DEFAULT_RETRY_BUDGET,
        nowMs: () => r.time.now,
      },
      payment.paymentId,
    );
    expect(starts).toHaveLength(1);
    expect(starts[0].attempt).toBeGreaterThan(1);
    // Reopened, the record keeps its generation (its origin precedes every call of the key, two days ago) and its
    // entity, whose `begin` says an earlier run may have called: the first call is held, never a blind charge.
    expect(starts[0].keyUsedBefore).toBeUndefined();
    expect(starts[0].keyOriginMs).toBe(T0);
    expect(providerCall(starts[0], 0, true, 0, r.time.now).hold).toMatch(/cannot be checked/);
    await r.t.shutdown();
  });

  test("an operator's retry of a record left in progress past its retention is a new generation: the key used before, unless checked at the provider", async () => {
    const retried = async (checkedAtProvider: boolean) => {
      const r = rig();
      await r.store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
      r.time.now += RETENTION_MS + 60_000; // its run died; past its retention, not yet swept
      const starts: ChargeOrchestrationInput[] = [];
      const start = async (_id: string, input: ChargeOrchestrationInput) => (starts.push(input), 'started' as const);
      await retryFailedPayment({ store: r.store, start, retry: DEFAULT_RETRY_BUDGET, nowMs: () => r.time.now, checkedAtProvider }, payment.paymentId);
      await r.t.shutdown();
      return { start: starts[0], nowMs: r.time.now };
    };
    const unchecked = await retried(false);
    expect(unchecked.start).toMatchObject({ attempt: 2, keyUsedBefore: true, keyOriginMs: unchecked.nowMs });
    expect(providerCall(unchecked.start, 0, true, 0, unchecked.nowMs).hold).toMatch(/cannot be checked/);
    const checked = await retried(true);
    expect(checked.start).toMatchObject({ attempt: 2, keyAgeAtStartMs: 0 });
    expect(checked.start.keyUsedBefore).toBeUndefined();
  });
});
