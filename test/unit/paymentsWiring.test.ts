import { ConfigurationError } from 'azure-functions-idempotency';
import { providerFromSettings, retryBudgetOf } from '../../src/app/payments';
import { loadSettings } from '../../src/config/settings';
import type { Telemetry } from '../../src/telemetry/Telemetry';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';

/**
 * The payments wiring from settings (src/app/payments.ts): the handoff run's retry budget, the provider client's base
 * URL, deadline and latency metric. The provider is the fake one on loopback.
 */
const settingsOf = (env: Record<string, string>) => loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', ...env });

function latencyRecorder() {
  const points: Array<{ ms: number; attributes: { statusCode: number } }> = [];
  const telemetry = { providerLatency: (ms: number, attributes: { statusCode: number }) => void points.push({ ms, attributes }) } as unknown as Telemetry;
  return { points, telemetry };
}

describe('retryBudgetOf', () => {
  test('minutes and seconds to milliseconds, rounded to the millisecond', () => {
    expect(
      retryBudgetOf(settingsOf({ PAYMENT_RETRY_BUDGET_MINUTES: '2.5', PAYMENT_RETRY_FIRST_DELAY_SECONDS: '1.5', PAYMENT_RETRY_MAX_DELAY_SECONDS: '30' })),
    ).toEqual({ budgetMs: 150_000, firstDelayMs: 1_500, maxDelayMs: 30_000, callLeaseMs: 170_000, postWindowMs: 160_000 });
    const odd = retryBudgetOf({
      PAYMENT_RETRY_BUDGET_MINUTES: 1 / 3,
      PAYMENT_RETRY_FIRST_DELAY_SECONDS: 0.0004,
      PAYMENT_RETRY_MAX_DELAY_SECONDS: 1.0006,
      PAYMENT_PROVIDER_TIMEOUT_MS: 100,
      PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS: 0.0004,
      PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS: 1.0006,
    } as never);
    // The call's lease: two requests (200 ms), the finish window (0 ms), the look-up's lag (1 001 ms) and the 30 s margin.
    expect(odd).toEqual({ budgetMs: 20_000, firstDelayMs: 0, maxDelayMs: 1_001, callLeaseMs: 31_201, postWindowMs: 31_101 });
  });
});

describe('providerFromSettings', () => {
  let provider: FakePaymentProvider | undefined;
  afterEach(async () => provider?.stop());

  test('without PAYMENT_PROVIDER_URL: a configuration error naming the setting', () => {
    expect(() => providerFromSettings(settingsOf({}))).toThrow(ConfigurationError);
    expect(() => providerFromSettings(settingsOf({}))).toThrow('PAYMENT_PROVIDER_URL is not set: the payments consumer needs the provider base URL');
  });

  test('charges at the base URL; each call reports its latency with the status code', async () => {
    provider = await FakePaymentProvider.start();
    const r = latencyRecorder();
    const client = providerFromSettings(settingsOf({ PAYMENT_PROVIDER_URL: provider.url }), r.telemetry);
    const result = await client.charge({ paymentId: 'pay-1', customerId: 'c', amount: 700, currency: 'EUR' }, 'pay-1');
    expect(result).toMatchObject({ status: 'succeeded', amount: 700 });
    expect(provider.effectiveCharges).toBe(1);
    expect(r.points).toEqual([{ ms: expect.any(Number), attributes: { statusCode: 201 } }]);
  });

  test('a call that gets no answer within PAYMENT_PROVIDER_TIMEOUT_MS reports that deadline and a latency with status code 0', async () => {
    provider = await FakePaymentProvider.start();
    provider.injectNext('timeout');
    const r = latencyRecorder();
    const client = providerFromSettings(settingsOf({ PAYMENT_PROVIDER_URL: provider.url, PAYMENT_PROVIDER_TIMEOUT_MS: '300' }), r.telemetry);
    await expect(client.charge({ paymentId: 'pay-2', customerId: 'c', amount: 700, currency: 'EUR' }, 'pay-2')).rejects.toThrow('no answer within 300 ms');
    expect(r.points).toEqual([{ ms: expect.any(Number), attributes: { statusCode: 0 } }]);
  });
});
