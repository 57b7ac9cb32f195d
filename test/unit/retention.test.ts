import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { loadSettings } from '../../src/config/settings';
import hostJson from '../../host.json';
import {
  assertRetentionCoversRedelivery,
  DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS,
  redeliveryWindow,
  retentionMsOf,
  type RetentionSettings,
} from '../../src/lifecycle/retention';

const DAY_MS = 86_400_000;
const defaults: RetentionSettings = {
  IDEMPOTENCY_RETENTION_DAYS: 30,
  SERVICEBUS_LOCK_DURATION_SECONDS: 60,
  SERVICEBUS_MAX_DELIVERY_COUNT: 10,
  SERVICEBUS_MESSAGE_TTL_SECONDS: 14 * 86_400,
  DLQ_RESUBMIT_MARGIN_DAYS: 14,
};

describe('retention rule', () => {
  test('window: queue TTL + max deliveries x (lock + auto-renewal) + DLQ resubmit margin', () => {
    const window = redeliveryWindow(defaults);
    expect(window.queueTtlMs).toBe(14 * DAY_MS);
    expect(window.deliveryHoldMs).toBe(60_000 + 300_000);
    expect(window.deliveriesMs).toBe(10 * 360_000);
    expect(window.resubmitMarginMs).toBe(14 * DAY_MS);
    expect(window.totalMs).toBe(28 * DAY_MS + 3_600_000);
  });

  test('window: without host lock renewal a delivery holds the message for one lock duration', () => {
    expect(redeliveryWindow(defaults, { maxAutoLockRenewalMs: 0 }).deliveriesMs).toBe(10 * 60_000);
  });

  test('the defaults of the app settings pass (30 days cover 28 days and 1 hour)', () => {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
    expect(() => assertRetentionCoversRedelivery(settings)).not.toThrow();
    expect(assertRetentionCoversRedelivery(settings).totalMs).toBe(28 * DAY_MS + 3_600_000);
  });

  test('a retention exactly equal to the window passes; a window 10 s longer fails', () => {
    const exact = { ...defaults, IDEMPOTENCY_RETENTION_DAYS: (28 * DAY_MS + 3_600_000) / DAY_MS };
    expect(retentionMsOf(exact)).toBe(28 * DAY_MS + 3_600_000);
    expect(() => assertRetentionCoversRedelivery(exact)).not.toThrow();
    expect(() => assertRetentionCoversRedelivery({ ...exact, SERVICEBUS_LOCK_DURATION_SECONDS: 61 })).toThrow(ConfigurationError);
  });

  test('a retention shorter than the window is a ConfigurationError naming every setting involved', () => {
    const short = { ...defaults, IDEMPOTENCY_RETENTION_DAYS: 7 };
    expect(() => assertRetentionCoversRedelivery(short)).toThrow(ConfigurationError);
    let message = '';
    try {
      assertRetentionCoversRedelivery(short);
    } catch (error) {
      message = (error as Error).message;
    }
    for (const name of [
      'IDEMPOTENCY_RETENTION_DAYS',
      'SERVICEBUS_MESSAGE_TTL_SECONDS',
      'SERVICEBUS_MAX_DELIVERY_COUNT',
      'SERVICEBUS_LOCK_DURATION_SECONDS',
      'DLQ_RESUBMIT_MARGIN_DAYS',
    ]) {
      expect(message).toContain(name);
    }
    expect(message).toMatch(/at least 28\.05/);
  });

  test('a long queue TTL alone can make the default retention too short', () => {
    expect(() => assertRetentionCoversRedelivery({ ...defaults, SERVICEBUS_MESSAGE_TTL_SECONDS: 30 * 86_400 })).toThrow(
      /IDEMPOTENCY_RETENTION_DAYS \(30 days\) is shorter/,
    );
  });

  test('a message TTL left at the Service Bus maximum (about 68 years) can never be covered', () => {
    expect(() => assertRetentionCoversRedelivery({ ...defaults, IDEMPOTENCY_RETENTION_DAYS: 3650, SERVICEBUS_MESSAGE_TTL_SECONDS: 2_147_483_647 })).toThrow(
      ConfigurationError,
    );
  });

  test('many deliveries with long locks count even with a short TTL', () => {
    const settings = {
      ...defaults,
      SERVICEBUS_MESSAGE_TTL_SECONDS: 60,
      DLQ_RESUBMIT_MARGIN_DAYS: 0,
      IDEMPOTENCY_RETENTION_DAYS: 1,
      SERVICEBUS_MAX_DELIVERY_COUNT: 2000,
      SERVICEBUS_LOCK_DURATION_SECONDS: 300,
    };
    expect(redeliveryWindow(settings).deliveriesMs).toBe(2000 * 600_000);
    expect(() => assertRetentionCoversRedelivery(settings)).toThrow(ConfigurationError);
  });

  test('the assumed lock auto-renewal is the one host.json configures', () => {
    const [h, m, sec] = hostJson.extensions.serviceBus.maxAutoLockRenewalDuration.split(':').map(Number);
    expect(((h * 60 + m) * 60 + sec) * 1000).toBe(DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS);
  });

  test('a negative auto-renewal is refused', () => {
    expect(() => redeliveryWindow(defaults, { maxAutoLockRenewalMs: -1 })).toThrow(ConfigurationError);
  });
});

/**
 * The retention rule's refusals (src/lifecycle/retention.ts), in memory: the text an operator reads when the app refuses
 * to start: the auto-renewal refused, and every figure of the "retention shorter than the redelivery window" message.
 */
describe('retention rule: the refusals an operator reads at start', () => {
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
    expect(() => redeliveryWindow(defaults, { maxAutoLockRenewalMs: Number.POSITIVE_INFINITY })).toThrow(
      'maxAutoLockRenewalMs must be 0 or more, got Infinity',
    );
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
});
