/**
 * The retention rule's refusals (src/lifecycle/retention.ts), in memory: the text an operator reads when the app refuses
 * to start, which Stryker's jest runner left unchecked (docs/mutation.md): the auto-renewal refused, and every figure of
 * the "retention shorter than the redelivery window" message.
 */
import { ConfigurationError } from 'azure-functions-idempotency';
import { assertRetentionCoversRedelivery, redeliveryWindow, retentionMsOf, type RetentionSettings } from '../../src/lifecycle/retention';

const DAY_MS = 86_400_000;
const defaults: RetentionSettings = {
  IDEMPOTENCY_RETENTION_DAYS: 30,
  SERVICEBUS_LOCK_DURATION_SECONDS: 60,
  SERVICEBUS_MAX_DELIVERY_COUNT: 10,
  SERVICEBUS_MESSAGE_TTL_SECONDS: 14 * 86_400,
  DLQ_RESUBMIT_MARGIN_DAYS: 14,
};

function refusal(settings: RetentionSettings, options?: { maxAutoLockRenewalMs?: number }): ConfigurationError {
  try {
    assertRetentionCoversRedelivery(settings, options);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error('expected a ConfigurationError');
}

test('an auto-renewal that is negative or not a number is refused, and the message says what was given', () => {
  expect(() => redeliveryWindow(defaults, { maxAutoLockRenewalMs: -1 })).toThrow(new ConfigurationError('maxAutoLockRenewalMs must be 0 or more, got -1'));
  expect(() => redeliveryWindow(defaults, { maxAutoLockRenewalMs: Number.NaN })).toThrow('maxAutoLockRenewalMs must be 0 or more, got NaN');
  expect(() => redeliveryWindow(defaults, { maxAutoLockRenewalMs: Number.POSITIVE_INFINITY })).toThrow('maxAutoLockRenewalMs must be 0 or more, got Infinity');
  expect(redeliveryWindow(defaults, { maxAutoLockRenewalMs: 0 }).deliveryHoldMs).toBe(60_000);
});

test('the refusal names each setting with its value, the auto-renewal in seconds, the window in days and the retention to set', () => {
  expect(refusal({ ...defaults, IDEMPOTENCY_RETENTION_DAYS: 7 }).message).toBe(
    'IDEMPOTENCY_RETENTION_DAYS (7 days) is shorter than the redelivery window of 28.04 days: SERVICEBUS_MESSAGE_TTL_SECONDS (1209600 s) + ' +
      'SERVICEBUS_MAX_DELIVERY_COUNT (10) x (SERVICEBUS_LOCK_DURATION_SECONDS (60 s) + lock auto-renewal (300 s)) + ' +
      'DLQ_RESUBMIT_MARGIN_DAYS (14 days); raise IDEMPOTENCY_RETENTION_DAYS to at least 28.05 or shorten the others',
  );
});

test('without host auto-renewal the message says 0 s of renewal; the window is given to two decimals of a day', () => {
  const settings = {
    ...defaults,
    IDEMPOTENCY_RETENTION_DAYS: 1,
    SERVICEBUS_MESSAGE_TTL_SECONDS: 86_400,
    DLQ_RESUBMIT_MARGIN_DAYS: 1,
    SERVICEBUS_LOCK_DURATION_SECONDS: 90,
  };
  // 1 day + 10 x 90 s + 1 day = 2 days and 900 s = 2.0104 days.
  expect(refusal(settings, { maxAutoLockRenewalMs: 0 }).message).toBe(
    'IDEMPOTENCY_RETENTION_DAYS (1 days) is shorter than the redelivery window of 2.01 days: SERVICEBUS_MESSAGE_TTL_SECONDS (86400 s) + ' +
      'SERVICEBUS_MAX_DELIVERY_COUNT (10) x (SERVICEBUS_LOCK_DURATION_SECONDS (90 s) + lock auto-renewal (0 s)) + ' +
      'DLQ_RESUBMIT_MARGIN_DAYS (1 days); raise IDEMPOTENCY_RETENTION_DAYS to at least 2.02 or shorten the others',
  );
});

test('a fractional retention is rounded to the millisecond', () => {
  expect(retentionMsOf({ IDEMPOTENCY_RETENTION_DAYS: 1.5 })).toBe(1.5 * DAY_MS);
  expect(retentionMsOf({ IDEMPOTENCY_RETENTION_DAYS: 1 / 86_400_000 + 1e-12 })).toBe(1);
});
