import { PaymentRetryError } from '../../src/payments/PaymentsConsumer';
import { MetricNames } from '../../src/telemetry/Telemetry';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { RoundTripCounter } from '../../tools/bench/RoundTripCounter';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startPaymentsRig, type PaymentsRigOptions } from '../../tools/local/paymentsRig';
import { useAzurite } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

const azuriteOf = useAzurite();
let provider: FakePaymentProvider;

beforeEach(async () => {
  provider = await FakePaymentProvider.start();
});
afterEach(async () => {
  await provider.stop();
});

async function rig(options: Partial<PaymentsRigOptions> = {}) {
  const t = inMemoryTelemetry();
  // The holding design (PAYMENTS_DESIGN=hold): the delivery waits for the charge; test/integration/paymentsHandOff.test.ts has the handoff.
  const r = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    telemetry: t.telemetry,
    design: 'hold',
    ...options,
  });
  return { ...r, t };
}

/** Redelivers like Service Bus while the handler throws a retryable error (up to 10 deliveries). */
async function deliverUntilSettled(r: Awaited<ReturnType<typeof rig>>, body: unknown, messageId: string) {
  for (let deliveryCount = 1; ; deliveryCount++) {
    try {
      return { result: await r.deliver(body, { messageId, deliveryCount }), deliveries: deliveryCount };
    } catch (error) {
      if (!(error instanceof PaymentRetryError) || deliveryCount >= 10) throw error;
    }
  }
}

const payment = (id: string, extra: Record<string, unknown> = {}) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR', ...extra });

describe('payments consumer: the real handler on Azurite, the local Durable executor and the fake provider', () => {
  test('the same message delivered 5 times charges once; duplicates return the stored result without a provider call', async () => {
    const r = await rig();
    const results = [];
    for (let i = 1; i <= 5; i++) results.push(await r.deliver(payment('pay-5x'), { messageId: 'pay-5x', deliveryCount: i }));
    expect(results[0]).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
    for (const later of results.slice(1))
      expect(later).toEqual({ outcome: 'duplicate', result: results[0].outcome === 'processed' ? results[0].result : undefined });
    expect(provider.chargesFor('pay-5x')).toBe(1);
    expect(provider.rawCalls).toBe(1);
    expect(await r.t.counter(MetricNames.duplicates, { consumer: 'payments' })).toBe(4);
    expect(r.t.logs().filter((l) => l.attributes.outcome === 'duplicate')).toHaveLength(4);
    // The Payment row was written with the marker and updated with it on completion.
    const address = r.store.addressOf(keyFromMessageId('payments', 'pay-5x'));
    const row = await r.store.client.getEntity(address.partitionKey, `${address.rowKey}~payment`);
    expect(row).toMatchObject({ paymentId: 'pay-5x', amount: 1250, currency: 'EUR', state: 'succeeded', chargeId: provider.charges[0].chargeId });
  });

  test('redelivery-aware: a settled payment redelivered (deliveryCount 2) costs 1 request on the dedup table, a producer duplicate (deliveryCount 1) 2', async () => {
    const r = await rig();
    await r.deliver(payment('pay-rd'), { messageId: 'pay-rd', deliveryCount: 1 });
    const counter = RoundTripCounter.attach(r.store.client);
    expect(await counter.measure(() => r.deliver(payment('pay-rd'), { messageId: 'pay-rd', deliveryCount: 2 }))).toBe(1);
    expect(await counter.measure(() => r.deliver(payment('pay-rd'), { messageId: 'pay-rd', deliveryCount: 1 }))).toBe(2);
    expect(provider.rawCalls).toBe(1);
  });

  test('20 concurrent deliveries of one message charge once and every delivery is acknowledged', async () => {
    const r = await rig({ leaseMs: 10_000 }); // waiting deliveries may wait up to 8 s on a loaded machine
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => r.deliver(payment('pay-20'), { messageId: 'pay-20', deliveryCount: 1 + (i % 3) })));
    expect(results.filter((x) => x.outcome === 'processed')).toHaveLength(1);
    expect(results.filter((x) => x.outcome === 'duplicate')).toHaveLength(19);
    expect(provider.effectiveCharges).toBe(1);
    expect(provider.rawCalls).toBe(1);
  });

  test('a crash after the provider charged but before the result was recorded: the replay does not charge again', async () => {
    let crashes = 0;
    const r = await rig({ crashBefore: (step) => step === 'after-activity:charge' && crashes++ === 0 });
    const result = await r.deliver(payment('pay-crash'), { messageId: 'pay-crash' });
    expect(result).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
    expect(crashes).toBeGreaterThan(0);
    expect(r.workflow.counters.crashes).toBe(1);
    // The restarted run's begin found the attempt in progress (uncertain); the key is well inside the provider's declared
    // memory (PAYMENT_PROVIDER_KEY_MEMORY_HOURS 24), so it re-sent the key and the provider replayed the charge.
    expect(provider.rawCalls).toBe(2);
    expect(provider.lookups).toBe(0);
    expect(provider.effectiveCharges).toBe(1);
    expect(await r.deliver(payment('pay-crash'), { messageId: 'pay-crash', deliveryCount: 2 })).toMatchObject({ outcome: 'duplicate' });
  });

  test('a crash of the consumer after the charge but before completing the claim: redelivery completes it without a provider call', async () => {
    const r = await rig({ leaseMs: 1_500 });
    const complete = r.store.complete.bind(r.store);
    let crashed = false;
    r.store.complete = async (...args) => {
      if (!crashed) {
        crashed = true;
        throw new Error('process died before completing the claim');
      }
      return complete(...args);
    };
    await expect(r.deliver(payment('pay-c2'), { messageId: 'pay-c2' })).rejects.toThrow('process died');
    expect(provider.effectiveCharges).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // the dead consumer's lease lapses
    const redelivered = await r.deliver(payment('pay-c2'), { messageId: 'pay-c2', deliveryCount: 2 });
    expect(redelivered).toMatchObject({ outcome: 'reclaimed', result: { status: 'succeeded' } });
    expect(provider.rawCalls).toBe(1);
    expect(provider.effectiveCharges).toBe(1);
    expect(await r.t.counter(MetricNames.takeovers, { consumer: 'payments' })).toBe(1);
    expect((await r.store.get(keyFromMessageId('payments', 'pay-c2')))?.status).toBe('COMPLETED');
  });

  test('"charged, then the connection dropped" and a timeout are retried with the same key and charge once', async () => {
    const r = await rig({ providerTimeoutMs: 300 });
    provider.injectNext('chargeThenDrop');
    expect(await r.deliver(payment('pay-drop'), { messageId: 'pay-drop' })).toMatchObject({ outcome: 'processed' });
    provider.injectNext('timeout');
    expect(await r.deliver(payment('pay-timeout'), { messageId: 'pay-timeout' })).toMatchObject({ outcome: 'processed' });
    expect(provider.chargesFor('pay-drop')).toBe(1);
    expect(provider.chargesFor('pay-timeout')).toBe(1);
    // Each retry re-sent the key inside the provider's memory: the dropped charge was replayed, the timed-out call had charged nothing.
    expect(provider.lookups).toBe(0);
    expect(provider.rawCalls).toBe(4);
  });

  test('every call for a payment carries the same Idempotency-Key, the paymentId', async () => {
    const r = await rig({ providerTimeoutMs: 300 });
    provider.injectNext('error5xx', 'chargeThenDrop');
    const first = await deliverUntilSettled(r, payment('pay-k1'), 'pay-k1');
    expect(first.deliveries).toBe(1); // 503, then the charge-then-drop, then the re-sent key replayed that charge
    provider.injectNext('timeout', 'error5xx');
    await deliverUntilSettled(r, payment('pay-k2'), 'pay-k2'); // timeout, 503, then charged
    expect(provider.rawCalls).toBe(6);
    expect(provider.lookups).toBe(0);
    expect(provider.effectiveCharges).toBe(2);
    expect([...provider.keysByPayment.entries()].map(([id, keys]) => [id, [...keys]])).toEqual([
      ['pay-k1', ['pay-k1']],
      ['pay-k2', ['pay-k2']],
    ]);
  });

  test('a transient failure leaves the message for redelivery; the redelivery charges once', async () => {
    const r = await rig({ activityRetry: { maxAttempts: 2, firstRetryIntervalMs: 10 } });
    provider.injectNext('error5xx', 'error5xx');
    const first = await r.deliver(payment('pay-t'), { messageId: 'pay-t' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(PaymentRetryError);
    expect((first as PaymentRetryError).retryable).toBe(true);
    expect(provider.effectiveCharges).toBe(0);
    expect((await r.store.get(keyFromMessageId('payments', 'pay-t')))?.status).toBe('RELEASED');
    expect(await r.deliver(payment('pay-t'), { messageId: 'pay-t', deliveryCount: 2 })).toMatchObject({
      outcome: 'reclaimed',
      result: { status: 'succeeded' },
    });
    expect(provider.effectiveCharges).toBe(1);
  });

  test('a permanent decline is recorded as the result, not retried; its duplicate returns the same decline', async () => {
    const r = await rig();
    const declined = await r.deliver(payment('pay-d', { customerId: 'decline-me' }), { messageId: 'pay-d' });
    expect(declined).toEqual({ outcome: 'processed', result: { status: 'declined', reason: 'card_declined' } });
    expect(await r.deliver(payment('pay-d', { customerId: 'decline-me' }), { messageId: 'pay-d', deliveryCount: 2 })).toEqual({
      outcome: 'duplicate',
      result: { status: 'declined', reason: 'card_declined' },
    });
    expect(provider.rawCalls).toBe(1);
    expect(provider.effectiveCharges).toBe(0);
  });

  test('a key reused with another body is parked with its reason and alerted, never charged or silently completed', async () => {
    const r = await rig();
    await r.deliver(payment('pay-r'), { messageId: 'pay-r' });
    const reused = await r.deliver(payment('pay-r', { amount: 99_999 }), { messageId: 'pay-r' });
    expect(reused).toMatchObject({ outcome: 'keyReused', reason: expect.stringMatching(/first used for a payload with digest/) });
    const parked = await r.parking.list('payments');
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({ reason: 'key-reused', messageId: 'pay-r' });
    expect(JSON.parse(parked[0].body.toString('utf8'))).toMatchObject({ amount: 99_999 });
    expect(await r.t.counter(MetricNames.keyReuse, { consumer: 'payments' })).toBe(1);
    expect(provider.rawCalls).toBe(1);
  });

  test.each([
    { what: 'bad JSON', body: '{"paymentId": "p-bad", ', metadata: { messageId: 'p-bad' }, reason: 'invalid-json' },
    { what: 'a missing field', body: { paymentId: 'p-m', amount: 1, currency: 'EUR' }, metadata: { messageId: 'p-m' }, reason: 'invalid-schema' },
    {
      what: 'a wrong amount',
      body: { paymentId: 'p-a', customerId: 'c', amount: 12.5, currency: 'EUR' },
      metadata: { messageId: 'p-a' },
      reason: 'invalid-schema',
    },
    {
      what: 'a wrong currency',
      body: { paymentId: 'p-c', customerId: 'c', amount: 1, currency: 'euro' },
      metadata: { messageId: 'p-c' },
      reason: 'invalid-schema',
    },
    { what: 'no MessageId', body: { paymentId: 'p-n', customerId: 'c', amount: 1, currency: 'EUR' }, metadata: {}, reason: 'missing-message-id' },
    {
      what: 'a MessageId that is not the paymentId',
      body: { paymentId: 'p-x', customerId: 'c', amount: 1, currency: 'EUR' },
      metadata: { messageId: 'other' },
      reason: 'message-id-mismatch',
    },
    { what: 'an oversized body', body: 'x'.repeat(300 * 1024), metadata: { messageId: 'p-big' }, reason: 'oversized' },
    {
      // The host copies a JSON body's top-level fields over the trigger metadata (Utility.ApplyBindingData, Azure/azure-functions-host,
      // src/WebJobs.Script/Utility.cs), so the metadata messageId here may be the body's: it is never taken as the key.
      what: 'a body field messageId (which the host copies over the real MessageId)',
      body: { paymentId: 'p-s', customerId: 'c', amount: 1, currency: 'EUR', MessageId: 'p-s' },
      metadata: { messageId: 'p-s' },
      reason: 'missing-message-id',
    },
  ])('a message with $what is parked with reason $reason and the consumer keeps going', async ({ body, metadata, reason }) => {
    const r = await rig();
    expect(await r.deliver(body, metadata)).toMatchObject({ outcome: 'parked', reason: expect.stringContaining(reason) });
    const parked = await r.parking.list('payments');
    expect(parked.map((p) => p.reason)).toEqual([reason]);
    expect(await r.t.counter(MetricNames.parked, { consumer: 'payments', reason })).toBe(1);
    expect(await r.deliver(payment('pay-next'), { messageId: 'pay-next' })).toMatchObject({ outcome: 'processed' });
    expect(provider.effectiveCharges).toBe(1);
  });

  test('logs carry key, message id, correlation id, delivery count, outcome and digest, never the payload; provider latency is measured', async () => {
    const r = await rig();
    const secret = { paymentId: 'pay-log', customerId: 'customer-secret-7731', amount: 987_654, currency: 'SEK' };
    await r.deliver(secret, { messageId: 'pay-log', correlationId: 'corr-42', deliveryCount: 3 });
    await r.deliver(secret, { messageId: 'pay-log', correlationId: 'corr-42', deliveryCount: 4 });
    const logs = r.t.logs();
    expect(logs.map((l) => l.attributes.outcome)).toEqual(['processed', 'duplicate']);
    for (const log of logs) {
      expect(log.attributes).toMatchObject({
        consumer: 'payments',
        idempotencyKey: 'pay-log',
        messageId: 'pay-log',
        correlationId: 'corr-42',
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      const text = JSON.stringify(log);
      expect(text).not.toContain('customer-secret-7731');
      expect(text).not.toContain('987654');
    }
    expect(logs[1].attributes.deliveryCount).toBe(4);
    expect(await r.t.histogramCount(MetricNames.providerLatency)).toBe(1);
    expect([...(provider.correlationIdsByPayment.get('pay-log') ?? [])]).toEqual(['corr-42']); // end to end
  });

  test('a duplicate arriving while the first delivery is charging waits and is acknowledged with the result', async () => {
    provider.setLatency(300);
    const r = await rig({ leaseMs: 10_000 });
    const first = r.deliver(payment('pay-slow'), { messageId: 'pay-slow' });
    while (provider.rawCalls < 1) await new Promise((resolve) => setTimeout(resolve, 10)); // the first delivery is charging
    const second = await r.deliver(payment('pay-slow'), { messageId: 'pay-slow', deliveryCount: 1 });
    expect(second).toMatchObject({ outcome: 'duplicate', result: { status: 'succeeded' } });
    expect(await first).toMatchObject({ outcome: 'processed' });
    expect(await r.t.counter(MetricNames.inProgress, { consumer: 'payments' })).toBe(1);
    expect(provider.effectiveCharges).toBe(1);
  });
});
