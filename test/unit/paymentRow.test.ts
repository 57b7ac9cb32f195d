import { createHash } from 'node:crypto';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { finishedPaymentRow, PAYMENT_ROW, paymentRow } from '../../src/payments/paymentRow';

/**
 * The Payment row a claim and a completion write beside the marker (src/payments/paymentRow.ts: what the status API and
 * an operator read) and the names a charge's run and entity are found by (src/payments/ChargeWorkflow.ts).
 */
const payment = { paymentId: 'pay-9', customerId: 'cust-9', amount: 4200, currency: 'GBP' };

describe('the Payment row', () => {
  test('pending at the claim: the payment, no charge id, no reason', () => {
    expect(PAYMENT_ROW).toBe('payment');
    expect(paymentRow(payment, 'pending')).toEqual({
      name: 'payment',
      properties: { paymentId: 'pay-9', customerId: 'cust-9', amount: 4200, currency: 'GBP', state: 'pending', chargeId: null },
    });
  });

  test('succeeded: its charge id, no reason', () => {
    expect(finishedPaymentRow(payment, { status: 'succeeded', chargeId: 'ch_9', amount: 4200, currency: 'GBP' })).toEqual({
      name: 'payment',
      properties: { paymentId: 'pay-9', customerId: 'cust-9', amount: 4200, currency: 'GBP', state: 'succeeded', chargeId: 'ch_9' },
    });
  });

  test('declined, rejected or failed: the state is the status, no charge id, the reason cut to 500 characters', () => {
    for (const result of [
      { status: 'declined' as const, reason: 'card declined' },
      { status: 'rejected' as const, reason: 'key reused', code: 'idempotency-key-reused' as const },
      { status: 'failed' as const, reason: 'retry budget spent' },
    ])
      expect(finishedPaymentRow(payment, result).properties).toEqual({ ...payment, state: result.status, chargeId: null, reason: result.reason });
    const long = finishedPaymentRow(payment, { status: 'failed', reason: 'r'.repeat(700) });
    expect(long.properties.reason).toBe('r'.repeat(500));
  });
});

describe("a charge's run and entity names", () => {
  test('the entity key is the SHA-256 (hex) of the record id, generation and digest, one per line; the instance id is payment-<key>', () => {
    const key = chargeEntityKey('rec-1', 1_700_000_000_000, 'digest-a');
    expect(key).toBe(createHash('sha256').update('rec-1\n1700000000000\ndigest-a', 'utf8').digest('hex'));
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(chargeEntityKey('rec-1', 1_700_000_000_001, 'digest-a')).not.toBe(key);
    expect(chargeEntityKey('rec-1', 1_700_000_000_000, 'digest-b')).not.toBe(key);
    expect(chargeInstanceId(key)).toBe(`payment-${key}`);
  });
});
