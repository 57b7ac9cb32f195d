import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadSettings } from '../../src/config/settings';
import {
  assertLeaseWithinRetention,
  assertRetryBudgetWithinRetention,
  assertPatienceCoversCharge,
  DURABLE_MAX_QUEUE_POLLING_MS,
  DURABLE_QUEUE_VISIBILITY_MS,
  PROVIDER_RETRY,
  waitBudgetMsOf,
  worstCaseChargeMs,
} from '../../src/payments/chargePatience';

const host = JSON.parse(readFileSync(join(__dirname, '..', '..', 'host.json'), 'utf8')) as {
  extensions: { durableTask: { storageProvider: Record<string, string> } };
};
const msOf = (timeSpan: string) => {
  const [h, m, s] = timeSpan.split(':').map(Number);
  return ((h * 60 + m) * 60 + s) * 1000;
};
const base = { IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: 'https://p.example' };

describe('the payments consumer outlasts a cold Durable start', () => {
  test('the polling interval the bound assumes is the one host.json sets (at most 10 s on Flex Consumption)', () => {
    expect(msOf(host.extensions.durableTask.storageProvider.maxQueuePollingInterval)).toBe(DURABLE_MAX_QUEUE_POLLING_MS);
    expect(DURABLE_MAX_QUEUE_POLLING_MS).toBeLessThanOrEqual(10_000);
  });

  test('a Durable host crash mid-charge stalls it for the queues visibility timeout: host.json sets 1 min (default 5 min) and the bound counts it', () => {
    // Seen on the real engine (test/durable): after a SIGKILL the charge's dequeued message reappeared only then.
    const provider = host.extensions.durableTask.storageProvider;
    expect(msOf(provider.controlQueueVisibilityTimeout)).toBe(DURABLE_QUEUE_VISIBILITY_MS);
    expect(msOf(provider.workItemQueueVisibilityTimeout)).toBe(DURABLE_QUEUE_VISIBILITY_MS);
    expect(worstCaseChargeMs(10_000).hostCrashMs).toBe(60_000);
    // A healthy activity (one provider call) ends well within the visibility timeout, so it is never run twice at once.
    expect(loadSettings(base).PAYMENT_PROVIDER_TIMEOUT_MS * 3).toBeLessThanOrEqual(DURABLE_QUEUE_VISIBILITY_MS);
  });

  test('defaults: 10 deliveries x 48 s = 480 s against a worst charge of 240 s (cold start, a host crash, 9 hops x 10 s, 5 x 10 s calls, 30 s of retries)', () => {
    const settings = loadSettings(base);
    const bound = worstCaseChargeMs(settings.PAYMENT_PROVIDER_TIMEOUT_MS);
    expect(bound).toEqual({ coldStartMs: 10_000, hostCrashMs: 60_000, queueHopsMs: 90_000, providerCallsMs: 50_000, retryDelaysMs: 30_000, totalMs: 240_000 });
    expect(waitBudgetMsOf(settings)).toBe(48_000);
    expect(assertPatienceCoversCharge(settings).patienceMs).toBe(480_000);
    expect(PROVIDER_RETRY.maxNumberOfAttempts).toBe(5);
  });

  test('with the pre-Flex default polling of 30 s the same settings would not be patient enough', () => {
    expect(2 * worstCaseChargeMs(10_000, 30_000).totalMs).toBeGreaterThan(480_000);
  });

  test('too few deliveries or too short a lease refuse to start, naming the settings', () => {
    expect(() => assertPatienceCoversCharge(loadSettings({ ...base, SERVICEBUS_MAX_DELIVERY_COUNT: '3' }))).toThrow(
      /SERVICEBUS_MAX_DELIVERY_COUNT \(3\).*IDEMPOTENCY_LEASE_SECONDS \(60 s\).*dead-letter/,
    );
    expect(() => assertPatienceCoversCharge(loadSettings({ ...base, IDEMPOTENCY_LEASE_SECONDS: '20' }))).toThrow(/IDEMPOTENCY_LEASE_SECONDS \(20 s\)/);
    expect(() => assertPatienceCoversCharge(loadSettings({ ...base, PAYMENT_PROVIDER_TIMEOUT_MS: '60000' }))).toThrow(
      /PAYMENT_PROVIDER_TIMEOUT_MS \(60000 ms\)/,
    );
  });

  test('handoff: a retry budget over half the retention refuses to start, naming both settings (a run must end long before its record can expire)', () => {
    expect(() => assertRetryBudgetWithinRetention(loadSettings({ ...base }))).not.toThrow(); // 60 min against 30 days
    // Delays up to a day: a budget of days stays within the provider rounds a run's history holds (checked at start too).
    const short = { ...base, IDEMPOTENCY_RETENTION_DAYS: '10', PAYMENT_RETRY_MAX_DELAY_SECONDS: '86400' };
    expect(() => assertRetryBudgetWithinRetention(loadSettings({ ...short, PAYMENT_RETRY_BUDGET_MINUTES: String(5 * 24 * 60) }))).not.toThrow();
    expect(() => assertRetryBudgetWithinRetention(loadSettings({ ...short, PAYMENT_RETRY_BUDGET_MINUTES: String(5 * 24 * 60 + 1) }))).toThrow(
      /PAYMENT_RETRY_BUDGET_MINUTES \(7201 min\) is more than half of IDEMPOTENCY_RETENTION_DAYS \(10 days\)/,
    );
  });

  test('handoff: a lease over half the retention refuses to start (a record whose run ended must reach the reconciler before the sweep; seeds 9790, 14576, 20912)', () => {
    expect(() => assertLeaseWithinRetention(loadSettings({ ...base }))).not.toThrow(); // 60 s against 30 days
    const day = { ...base, IDEMPOTENCY_RETENTION_DAYS: '1' };
    expect(() => assertLeaseWithinRetention(loadSettings({ ...day, IDEMPOTENCY_LEASE_SECONDS: '43200' }))).not.toThrow();
    // Seed 9790's: the lease lapsed at 23.7 h, the retention ended at 24 h: the sweep deleted the record before any reconciler pass.
    expect(() => assertLeaseWithinRetention(loadSettings({ ...day, IDEMPOTENCY_LEASE_SECONDS: '85352' }))).toThrow(
      /IDEMPOTENCY_LEASE_SECONDS \(85352 s\) is more than half of IDEMPOTENCY_RETENTION_DAYS \(1 days\)/,
    );
    expect(() => assertLeaseWithinRetention(loadSettings({ ...day, IDEMPOTENCY_LEASE_SECONDS: '43201' }))).toThrow(/IDEMPOTENCY_LEASE_SECONDS/);
  });
});

describe('the patience check: its refusal', () => {
  test('the refusal spells out the arithmetic in seconds', () => {
    const settings = { IDEMPOTENCY_LEASE_SECONDS: 60, SERVICEBUS_MAX_DELIVERY_COUNT: 5, PAYMENT_PROVIDER_TIMEOUT_MS: 10_000 };
    expect(() => assertPatienceCoversCharge(settings)).toThrow(
      'SERVICEBUS_MAX_DELIVERY_COUNT (5) x 0.8 x IDEMPOTENCY_LEASE_SECONDS (60 s) = 240 s of deliveries is less than 2 x the slowest charge ' +
        '(240 s: cold start 10 s + host crash 60 s + 9 queue hops x 10 s + 5 provider calls x PAYMENT_PROVIDER_TIMEOUT_MS (10000 ms) + retry delays 30 s): ' +
        'charged payments would reach the dead-letter queue. Raise the delivery count or the lease, or lower the timeout',
    );
  });
});
