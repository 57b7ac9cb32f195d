/**
 * The payments consumer's duplicate of a payment whose run is going (src/payments/PaymentsConsumer.ts, handoff), a
 * duplicate answered from the cache, and the read before the insert of a redelivery. The delivery is acknowledged `inProgress` and its
 * log names why (the orchestration started), the key and the record's attempt: what an operator reads.
 */
import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { inMemoryTelemetry } from '../support/telemetry';

test('a duplicate of a payment whose run is going: acknowledged inProgress, logged with the reason, the key and the attempt', async () => {
  const payment = { paymentId: 'pay-dup', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
  const now = Date.UTC(2026, 0, 1);
  const clock = { nowMs: () => now };
  const store = new InMemoryIdempotencyStore({ clock, leaseMs: 30_000 });
  await store.claim(keyFromMessageId('payments', payment.paymentId), payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  const workflow: ChargeWorkflow = { status: async () => ({ state: 'running' }), start: async () => 'started' };
  const t = inMemoryTelemetry();
  const consumer = new PaymentsConsumer({
    store,
    parking: { park: async () => undefined } as unknown as ParkingStore,
    telemetry: t.telemetry,
    clock,
    sleep: async () => undefined,
    waitBudgetMs: 60_000,
    design: 'handoff',
  }).withWorkflow(workflow);

  expect(await consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 1 })).toMatchObject({ outcome: 'inProgress', attempt: 1 });
  const logged = t.logs().filter((l) => l.attributes.outcome === 'inProgress');
  expect(logged.map((l) => [l.body, l.attributes.reason, l.attributes.idempotencyKey, l.attributes.attempt])).toEqual([
    ['payments: inProgress (orchestration-started)', 'orchestration-started', 'pay-dup', 1],
  ]);
  await t.shutdown();
});

test('a duplicate answered from the store’s cache of completed keys is reported as cached (the duplicate count by source)', async () => {
  const now = Date.UTC(2026, 0, 1);
  const store = new InMemoryIdempotencyStore({ clock: { nowMs: () => now } });
  const result = { status: 'succeeded', chargeId: 'ch-1', amount: 1250, currency: 'EUR' };
  const record = { attempt: 3, result, digest: 'd' };
  store.claim = async () => ({ kind: 'duplicate', cached: true, record }) as never;
  const t = inMemoryTelemetry();
  const consumer = new PaymentsConsumer({ store, parking: {} as ParkingStore, telemetry: t.telemetry, clock: { nowMs: () => now }, waitBudgetMs: 1_000 });
  const payment = { paymentId: 'pay-cached', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
  await expect(consumer.handle(payment, { messageId: payment.paymentId })).resolves.toEqual({ outcome: 'duplicate', result });
  expect(await t.counter('idempotency.duplicates', { consumer: 'payments', reason: 'cached' })).toBe(1);
  expect(t.logs().map((l) => [l.attributes.reason, l.attributes.attempt])).toEqual([['cached', 3]]);
  await t.shutdown();
});

test('a redelivery asks the store to read before inserting on its first claim only; a first delivery inserts at once', async () => {
  let now = Date.UTC(2026, 0, 1);
  const store = new InMemoryIdempotencyStore({ clock: { nowMs: () => now }, leaseMs: 30_000 });
  const payment = { paymentId: 'pay-read', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
  await store.claim(keyFromMessageId('payments', payment.paymentId), payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  const readFirst: unknown[] = [];
  const claim = store.claim.bind(store);
  store.claim = (key, digest, options) => (readFirst.push(options?.readFirst), claim(key, digest, options));
  const workflow: ChargeWorkflow = { status: async () => ({ state: 'none' }), start: async () => 'started' };
  const make = () =>
    new PaymentsConsumer({
      store,
      parking: {} as ParkingStore,
      telemetry: inMemoryTelemetry().telemetry,
      clock: { nowMs: () => now },
      sleep: async (ms) => void (now += ms),
      waitBudgetMs: 60_000,
    }).withWorkflow(workflow);
  now += 45_000; // the first delivery's lease has lapsed: looked at, then taken over
  await make().handle(payment, { messageId: payment.paymentId, deliveryCount: 3 });
  expect(readFirst).toEqual([true, false]);
  readFirst.length = 0;
  await make().handle({ ...payment, paymentId: 'pay-new' }, { messageId: 'pay-new' });
  expect(readFirst).toEqual([false]);
});
