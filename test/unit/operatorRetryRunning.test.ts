/**
 * The operator's retry (`retryFailedPayment`, `npm run payments:retry`) refuses a payment whose lifetime's run is still
 * Running, Pending or Suspended, whatever its record says: that run would refuse the new start, and the record would be
 * left claimed by a new attempt with nothing running for it (simulator, world 2, seed 47: a held payment retried while
 * its run was suspended). Nothing is changed by a refusal.
 */
import { keyFromMessageId, payloadDigest, RecordStatus } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { PaymentRetryRefusedError, retryFailedPayment } from '../../src/app/paymentRetry';
import type { WorkflowStatus } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { DEFAULT_RETRY_BUDGET } from '../../src/payments/PaymentsConsumer';

const payment = { paymentId: 'pay-op', customerId: 'cust-1', amount: 700, currency: 'EUR' };
const key = keyFromMessageId('payments', payment.paymentId);

async function heldPayment(store: InMemoryIdempotencyStore): Promise<void> {
  const outcome = await store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  await store.complete(outcome.claim, { status: 'failed', reason: 'held for an operator: check the key', code: 'held-for-operator' }, [
    paymentRow(payment, 'failed'),
  ]);
}

test.each<[string, WorkflowStatus, boolean]>([
  ['running (or suspended: Durable reports it as not ended)', { state: 'running' }, true],
  ['ended (terminated)', { state: 'failed', reason: 'terminated' }, false],
  ['gone (purged)', { state: 'none' }, false],
])('a held payment whose run is %s: refused or retried as it says', async (_name, status, refused) => {
  const store = new InMemoryIdempotencyStore();
  await heldPayment(store);
  const starts: string[] = [];
  const asked: string[] = [];
  const retry = retryFailedPayment(
    {
      store,
      start: async (instanceId) => (starts.push(instanceId), 'started'),
      retry: DEFAULT_RETRY_BUDGET,
      status: async (instanceId) => (asked.push(instanceId), status),
    },
    payment.paymentId,
  );
  if (refused) {
    await expect(retry).rejects.toThrow(PaymentRetryRefusedError);
    await expect(retry).rejects.toThrow(/still running, pending or suspended/);
    expect(starts).toEqual([]);
    expect((await store.get(key))?.status).toBe(RecordStatus.Completed);
  } else {
    await expect(retry).resolves.toMatchObject({ attempt: 2, started: 'started' });
    expect(starts).toEqual(asked);
  }
  expect(asked).toHaveLength(1);
});
