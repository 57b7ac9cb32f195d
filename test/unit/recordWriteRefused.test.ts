import { StoreRequestError, StoreUnavailableError, keyFromMessageId, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import { writeRecordOnce } from '../../src/app/durableCharge';
import { inMemoryTelemetry } from '../support/telemetry';

const claim = { key: keyFromMessageId('payments', 'pay-1'), attempt: 1 } as Claim;
const input = {
  claim,
  result: { status: 'succeeded', chargeId: 'ch_1', amount: 100, currency: 'EUR' },
  payment: { paymentId: 'pay-1', customerId: 'c', amount: 100, currency: 'EUR' },
} as const;
const failingWith = (error: Error) => ({ complete: () => Promise.reject(error) }) as unknown as IdempotencyStore;

test('a record write the store refuses (403 after a role change) is alerted at once, naming the key; a store that does not answer only warns (issue 43 item 4)', async () => {
  const t = inMemoryTelemetry();
  await expect(writeRecordOnce(failingWith(new StoreRequestError('forbidden', 'complete', 403)), () => t.telemetry, input)).rejects.toBeInstanceOf(
    StoreRequestError,
  );
  await expect(writeRecordOnce(failingWith(new StoreUnavailableError('timeout', 'complete')), () => t.telemetry, input)).rejects.toBeInstanceOf(
    StoreUnavailableError,
  );
  expect(await t.counter('payments.record_write_refused', { consumer: 'payments' })).toBe(1);
  const lines = t.logs().map((l) => [l.severity, l.attributes.outcome, l.attributes.idempotencyKey]);
  expect(lines).toEqual([
    ['ERROR', 'record-write-refused', 'pay-1'],
    ['WARN', 'recordWriteRetry', 'pay-1'],
  ]);
  await t.shutdown();
});
