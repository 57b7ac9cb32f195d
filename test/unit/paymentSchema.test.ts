import { PaymentRequestedSchema } from '../../src/payments/schema';

/**
 * The PaymentRequested message's rules (src/payments/schema.ts) at each bound: what is accepted, what is refused and
 * with which reason (the reason reaches the dead-letter queue). `paymentId` is the provider's Idempotency-Key header.
 * zod builds these rules when the module loads: each bound is held here, one value on each side.
 */
const valid = { paymentId: 'pay-1', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
const parse = (patch: Record<string, unknown>) => PaymentRequestedSchema.safeParse({ ...valid, ...patch });
const reasons = (patch: Record<string, unknown>) => {
  const result = parse(patch);
  return result.success ? [] : result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('paymentId: 1-128 header-safe characters', () => {
  test.each(['a', 'A.z_0:-9', 'x'.repeat(128)])('accepts %p', (paymentId) => {
    expect(parse({ paymentId }).success).toBe(true);
  });
  test.each(['', 'x'.repeat(129), 'a b', 'a/b', ' a', 'a ', 'a\n', 'ä'])('refuses %p with the rule', (paymentId) => {
    expect(reasons({ paymentId })).toEqual(['paymentId: 1-128 characters of A-Z a-z 0-9 . _ : -']);
  });
});

describe('customerId: 1-128 characters once trimmed', () => {
  test('is trimmed', () => {
    expect(parse({ customerId: '  cust-9 \t' })).toEqual({ success: true, data: { ...valid, customerId: 'cust-9' } });
  });
  test.each(['c', 'cc', 'c'.repeat(128)])('accepts a customer id of %#', (customerId) => {
    expect(parse({ customerId }).success).toBe(true);
  });
  test.each(['', '   ', 'c'.repeat(129)])('refuses %p', (customerId) => {
    expect(parse({ customerId }).success).toBe(false);
    expect(reasons({ customerId })).toHaveLength(1);
  });
});

describe('amount: a positive integer of minor units', () => {
  test.each([1, 2, 1250, Number.MAX_SAFE_INTEGER])('accepts %p', (amount) => {
    expect(parse({ amount }).success).toBe(true);
  });
  test('a fraction is refused as not minor units', () => {
    expect(reasons({ amount: 12.5 })).toEqual(['amount: integer minor units']);
  });
  test.each([0, -1, Number.MAX_SAFE_INTEGER + 2, '1250'])('refuses %p', (amount) => {
    expect(parse({ amount }).success).toBe(false);
  });
});

describe('currency: ISO 4217, three capital letters', () => {
  test.each(['EUR', 'USD', 'TRY'])('accepts %p', (currency) => {
    expect(parse({ currency }).success).toBe(true);
  });
  test.each(['eur', 'EU', 'EURO', 'XEUR', 'EURX', 'E1R', ''])('refuses %p with the rule', (currency) => {
    expect(reasons({ currency })).toEqual(['currency: an ISO 4217 code: three capital letters']);
  });
});

test('unknown fields are dropped (a producer adding one does not change the digest)', () => {
  expect(PaymentRequestedSchema.parse({ ...valid, note: 'gift' })).toEqual(valid);
});
