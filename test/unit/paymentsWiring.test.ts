import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigurationError } from 'azure-functions-idempotency';
import { paymentsFromSettings, providerFromSettings, retryBudgetOf } from '../../src/app/payments';
import { paymentsFunctionsFrom } from '../../src/app/paymentsFunctions';
import { loadSettings } from '../../src/config/settings';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import { ProviderRefusedError } from '../../src/payments/PaymentProviderClient';
import type { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { Telemetry } from '../../src/telemetry/Telemetry';
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

  test('an answer from a layer before the provider (401: a rotated secret) is counted in payments.provider.refused with its status code', async () => {
    const server = createServer((_request, response) => response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid api key"}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const counted: unknown[] = [];
      const telemetry = { providerLatency: () => undefined, count: (...args: unknown[]) => void counted.push(args) } as unknown as Telemetry;
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const client = providerFromSettings(settingsOf({ PAYMENT_PROVIDER_URL: url }), telemetry);
      await expect(client.charge({ paymentId: 'pay-3', customerId: 'c', amount: 700, currency: 'EUR' }, 'pay-3')).rejects.toBeInstanceOf(ProviderRefusedError);
      expect(counted).toEqual([['payments.provider.refused', { consumer: 'payments', statusCode: 401 }]]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
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

/**
 * What the wiring hands the consumer (src/app/payments.ts, src/app/paymentsFunctions.ts): the wait budget from the
 * lease (`/ 1000`, not `* 1000`), the design and the retry budget from the settings unless overridden, and, in the
 * trigger's parts, the app's telemetry and no workflow (Durable's client is per invocation), the other overrides kept.
 * Nothing is sent or stored.
 */
const withProviderOf = (env: Record<string, string>) =>
  loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9', ...env });

/** The consumer's constructor arguments (a private field: this is a wiring test). */
const depsOf = (consumer: PaymentsConsumer) => (consumer as unknown as { deps: Record<string, unknown> }).deps;

describe('paymentsFromSettings: what the consumer is given', () => {
  test('the wait budget is 80 % of the lease, in milliseconds', () => {
    expect(depsOf(paymentsFromSettings(withProviderOf({ IDEMPOTENCY_LEASE_SECONDS: '60' })).consumer).waitBudgetMs).toBe(48_000);
    expect(depsOf(paymentsFromSettings(withProviderOf({ IDEMPOTENCY_LEASE_SECONDS: '10' })).consumer).waitBudgetMs).toBe(8_000);
  });

  test('the design: the settings unless an override names one', () => {
    expect(depsOf(paymentsFromSettings(withProviderOf({ PAYMENTS_DESIGN: 'hold' })).consumer).design).toBe('hold');
    expect(depsOf(paymentsFromSettings(withProviderOf({})).consumer).design).toBe('handoff');
    expect(depsOf(paymentsFromSettings(withProviderOf({ PAYMENTS_DESIGN: 'hold' }), { design: 'handoff' }).consumer).design).toBe('handoff');
    expect(depsOf(paymentsFromSettings(withProviderOf({}), { design: 'hold' }).consumer).design).toBe('hold');
  });

  test('the retry budget: PAYMENT_RETRY_* unless an override gives one', () => {
    const settings = withProviderOf({ PAYMENT_RETRY_BUDGET_MINUTES: '2', PAYMENT_RETRY_FIRST_DELAY_SECONDS: '3', PAYMENT_RETRY_MAX_DELAY_SECONDS: '40' });
    expect(depsOf(paymentsFromSettings(settings).consumer).retry).toEqual({
      budgetMs: 120_000,
      firstDelayMs: 3_000,
      maxDelayMs: 40_000,
      callLeaseMs: 170_000,
      postWindowMs: 160_000,
    });
    const retry = { budgetMs: 5, firstDelayMs: 1, maxDelayMs: 2 };
    expect(depsOf(paymentsFromSettings(settings, { retry }).consumer).retry).toBe(retry);
  });
});

describe('paymentsFunctionsFrom: the trigger parts', () => {
  test('get the telemetry the functions use and never the rig workflow (the trigger builds Durable client per invocation)', () => {
    const telemetry = new Telemetry();
    const workflow = { start: jest.fn() } as unknown as ChargeWorkflow;
    const functions = paymentsFunctionsFrom(withProviderOf({ PAYMENTS_DESIGN: 'hold' }), { telemetry, workflow, design: 'handoff' });
    const deps = depsOf(functions.parts().consumer);
    expect(deps.telemetry).toBe(telemetry);
    expect(deps.workflow).toBeUndefined();
    // The other overrides reach the parts (the object is extended, not replaced).
    expect(deps.design).toBe('handoff');
    expect(functions.parts()).toBe(functions.parts());
  });
});
