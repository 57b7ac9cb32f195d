import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { PaymentRetryError } from '../../src/payments/PaymentsConsumer';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startPaymentsRig, type PaymentsRigOptions } from '../../tools/local/paymentsRig';
import { useAzurite } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const azuriteOf = useAzurite();
let provider: FakePaymentProvider;

beforeEach(async () => {
  provider = await FakePaymentProvider.start();
});
afterEach(async () => {
  await provider.stop();
});

/** Real time plus a jump the test controls (the consumer still waits in real time). */
class JumpingClock {
  offsetMs = 0;
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
}

async function rig(options: Partial<PaymentsRigOptions> = {}) {
  const clock = new JumpingClock();
  const recorded = inMemoryTelemetry();
  const r = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    telemetry: recorded.telemetry,
    retentionMs: RETENTION_MS,
    clock,
    design: 'hold',
    ...options,
  });
  const sweep = () => new ExpirySweeper(r.store.client, { budgetMs: 60_000, clock }).sweep();
  return { ...r, clock, sweep, recorded };
}

const payment = (id: string, amount = 1250) => ({ paymentId: id, customerId: 'cust-1', amount, currency: 'EUR' });

describe('payments across record lifetimes (expiry and sweep)', () => {
  test.each([
    { when: 'expired, not yet swept', swept: false },
    { when: 'expired and swept', swept: true },
  ])('a paymentId reused for another amount after its record $when is never acknowledged with the first charge', async ({ swept }) => {
    const r = await rig();
    const first = await r.deliver(payment('pay-reuse', 1250), { messageId: 'pay-reuse' });
    expect(first).toMatchObject({ outcome: 'processed', result: { status: 'succeeded', amount: 1250 } });
    r.clock.offsetMs += RETENTION_MS + 1;
    if (swept) expect(await r.sweep()).toMatchObject({ deleted: 1, deletedLocalRows: 1 });
    const reused = await r.deliver(payment('pay-reuse', 999), { messageId: 'pay-reuse' });
    // Not the first charge. Swept: a fresh record, the provider refuses the key with another body (422: rejected). Not
    // swept: the expired record taken over starts a generation at attempt 2 that relies on no key memory
    // (keyUsedBefore): with no look-up declared it is held for an operator, never charged, never the first charge.
    expect(['processed', 'reclaimed']).toContain(reused.outcome); // reclaimed: the expired record was taken over
    expect(reused).not.toMatchObject({ result: { status: 'succeeded' } });
    const outcome = swept ? { status: 'rejected' } : { status: 'failed', code: 'held-for-operator' };
    expect(reused).toMatchObject({ result: outcome });
    const record = await r.store.get(keyFromMessageId('payments', 'pay-reuse'));
    expect(record).toMatchObject({ status: 'COMPLETED', digest: payloadDigest(payment('pay-reuse', 999)), result: outcome });
    expect(provider.chargesFor('pay-reuse')).toBe(1);
    // The operator hears of it: as of any key reuse (the key-reuse alert, with a log line), or as a held payment.
    if (swept) {
      expect(await r.recorded.counter('idempotency.key_reuse', { consumer: 'payments' })).toBe(1);
      expect(r.recorded.logs().filter((l) => l.attributes.reason === 'provider-key-reused')).toHaveLength(1);
    } else expect(await r.recorded.counter('payments.held', { consumer: 'payments' })).toBeGreaterThanOrEqual(1);
  });

  test('a payment resubmitted from the dead-letter queue after its record was swept is processed (its Payment row is written again) and charged once', async () => {
    const r = await rig();
    const first = await r.deliver(payment('pay-dlq'), { messageId: 'pay-dlq' });
    r.clock.offsetMs += RETENTION_MS + 1;
    expect(await r.sweep()).toMatchObject({ deleted: 1, deletedLocalRows: 1 });
    const resubmitted = await r.deliver(payment('pay-dlq'), { messageId: 'pay-dlq', deliveryCount: 1 });
    expect(resubmitted).toMatchObject({ outcome: 'processed', result: first.outcome === 'processed' ? first.result : {} });
    const address = r.store.addressOf(keyFromMessageId('payments', 'pay-dlq'));
    expect(await r.store.client.getEntity(address.partitionKey, `${address.rowKey}~payment`)).toMatchObject({ state: 'succeeded' });
    expect(provider.effectiveCharges).toBe(1); // the provider replayed its charge for the same key and body
  });

  test('after a sweep a new claim (attempt 1 again) is never stale against the entity of the swept lifetime', async () => {
    const r = await rig({ activityRetry: { maxAttempts: 1, firstRetryIntervalMs: 10 } });
    provider.injectNext('error5xx', 'error5xx', 'error5xx');
    for (let deliveryCount = 1; deliveryCount <= 3; deliveryCount++) {
      await expect(r.deliver(payment('pay-fence'), { messageId: 'pay-fence', deliveryCount })).rejects.toThrow(PaymentRetryError);
    }
    expect(await r.store.get(keyFromMessageId('payments', 'pay-fence'))).toMatchObject({ status: 'RELEASED', attempt: 3 });
    r.clock.offsetMs += RETENTION_MS + 1;
    expect(await r.sweep()).toMatchObject({ deleted: 1 });
    // A resubmission after the sweep: attempt 1 of a new lifetime, charged at its first delivery.
    expect(await r.deliver(payment('pay-fence'), { messageId: 'pay-fence' })).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
    expect(provider.effectiveCharges).toBe(1);
  });
});
