import { paymentsFromSettings } from '../../src/app/payments';
import { paymentsFunctionsFrom } from '../../src/app/paymentsFunctions';
import { loadSettings } from '../../src/config/settings';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import type { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { Telemetry } from '../../src/telemetry/Telemetry';

/**
 * What the payments wiring hands the consumer (src/app/payments.ts, src/app/paymentsFunctions.ts): the wait budget from
 * the lease, the design and the retry budget from the settings unless overridden, and, in the trigger's parts, the
 * app's telemetry and no workflow (Durable's client is per invocation). Named gaps of the third mutation pass
 * (docs/mutation.md): `/ 1000` -> `* 1000`, `??` -> `&&`, the parts' overrides emptied. Nothing is sent or stored.
 */
const settingsOf = (env: Record<string, string>) =>
  loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9', ...env });

/** The consumer's constructor arguments (a private field: this is a wiring test). */
const depsOf = (consumer: PaymentsConsumer) => (consumer as unknown as { deps: Record<string, unknown> }).deps;

describe('paymentsFromSettings: what the consumer is given', () => {
  test('the wait budget is 80 % of the lease, in milliseconds', () => {
    expect(depsOf(paymentsFromSettings(settingsOf({ IDEMPOTENCY_LEASE_SECONDS: '60' })).consumer).waitBudgetMs).toBe(48_000);
    expect(depsOf(paymentsFromSettings(settingsOf({ IDEMPOTENCY_LEASE_SECONDS: '10' })).consumer).waitBudgetMs).toBe(8_000);
  });

  test('the design: the settings unless an override names one', () => {
    expect(depsOf(paymentsFromSettings(settingsOf({ PAYMENTS_DESIGN: 'hold' })).consumer).design).toBe('hold');
    expect(depsOf(paymentsFromSettings(settingsOf({})).consumer).design).toBe('handoff');
    expect(depsOf(paymentsFromSettings(settingsOf({ PAYMENTS_DESIGN: 'hold' }), { design: 'handoff' }).consumer).design).toBe('handoff');
    expect(depsOf(paymentsFromSettings(settingsOf({}), { design: 'hold' }).consumer).design).toBe('hold');
  });

  test('the retry budget: PAYMENT_RETRY_* unless an override gives one', () => {
    const settings = settingsOf({ PAYMENT_RETRY_BUDGET_MINUTES: '2', PAYMENT_RETRY_FIRST_DELAY_SECONDS: '3', PAYMENT_RETRY_MAX_DELAY_SECONDS: '40' });
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
    const functions = paymentsFunctionsFrom(settingsOf({ PAYMENTS_DESIGN: 'hold' }), { telemetry, workflow, design: 'handoff' });
    const deps = depsOf(functions.parts().consumer);
    expect(deps.telemetry).toBe(telemetry);
    expect(deps.workflow).toBeUndefined();
    // The other overrides reach the parts (the object is extended, not replaced).
    expect(deps.design).toBe('handoff');
    expect(functions.parts()).toBe(functions.parts());
  });
});
