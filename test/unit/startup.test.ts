import type * as FunctionsCore from '../../tools/local/host/functionsCore';
const VALID = {
  IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
  COSMOS_ENDPOINT: 'https://127.0.0.1:9',
  SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://127.0.0.1;SharedAccessKeyName=k;SharedAccessKey=v',
  WEBHOOK_SIGNING_SECRET: 'whsec_startup_0123456789',
};
type Entry = 'payments' | 'ordersConsumer' | 'expiryTimer' | 'http';

/**
 * Loads one entry point in a fresh module registry with exactly `env`, as the worker does: what it
 * registered (through the `@azure/functions-core` stand-in), what it threw, and its console.error lines.
 */
function load(env: Record<string, string>, entry: Entry): { error: unknown; registered: string[]; errors: string[] } {
  const saved = process.env;
  process.env = { ...env };
  const errors: string[] = [];
  const spy = jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void errors.push(args.map(String).join(' ')));
  try {
    let error: unknown;
    let registered: string[] = [];
    jest.isolateModules(() => {
      const core = require('@azure/functions-core') as typeof FunctionsCore;
      try {
        registered = core.captureRegistrations(() => require(`../../src/functions/${entry}`)).map((f) => f.metadata.name);
      } catch (e) {
        error = e;
      }
    });
    return { error, registered, errors };
  } finally {
    spy.mockRestore();
    process.env = saved;
  }
}

describe('app start (the Functions registrations)', () => {
  beforeAll(() => jest.spyOn(console, 'warn').mockImplementation(() => undefined));

  test('valid settings: every entry point registers its functions and logs no error', () => {
    expect(load(VALID, 'payments')).toEqual({
      error: undefined,
      registered: ['paymentsConsumer', 'chargePayment', 'paymentCharge', 'chargeProvider', 'completePaymentRecord'],
      errors: [],
    });
    expect(load(VALID, 'ordersConsumer')).toEqual({ error: undefined, registered: ['ordersConsumer'], errors: [] });
    expect(load(VALID, 'expiryTimer')).toEqual({ error: undefined, registered: ['expiryTimer'], errors: [] });
    expect(load(VALID, 'http')).toEqual({ error: undefined, registered: ['paymentsApi', 'paymentStatus', 'paymentProviderWebhook'], errors: [] });
  });

  test('a bad shared setting (retention shorter than the redelivery window, a malformed partition count, no table) refuses to start every entry point, naming it', () => {
    for (const entry of ['payments', 'ordersConsumer', 'expiryTimer', 'http'] as const) {
      const retention = load({ ...VALID, IDEMPOTENCY_RETENTION_DAYS: '2' }, entry).error as Error;
      // A fresh module registry has its own ConfigurationError class: compare the name.
      expect(retention.name).toBe('ConfigurationError');
      expect(retention.message).toMatch(/IDEMPOTENCY_RETENTION_DAYS/);
      expect(retention.message).toMatch(/SERVICEBUS_MESSAGE_TTL_SECONDS/);
      expect((load({ ...VALID, IDEMPOTENCY_PARTITION_COUNT: 'many' }, entry).error as Error).message).toMatch(/IDEMPOTENCY_PARTITION_COUNT/);
      const { IDEMPOTENCY_TABLE_CONNECTION_STRING: _table, ...noTable } = VALID;
      expect((load(noTable, entry).error as Error).message).toMatch(/IDEMPOTENCY_TABLE_ENDPOINT/);
    }
  });

  test.each([
    ['payments', 'PAYMENT_PROVIDER_URL', undefined],
    ['payments', 'PAYMENT_PROVIDER_TIMEOUT_MS', 'slow'],
    ['ordersConsumer', 'COSMOS_ENDPOINT', undefined],
    ['ordersConsumer', 'COSMOS_ENDPOINT', 'not a url'],
    ['expiryTimer', 'EXPIRY_SWEEP_BUDGET_SECONDS', 'soon'],
    ['expiryTimer', 'EXPIRY_TIMER_SCHEDULE', '0 0 0 1,15 * *'], // runs up to 17 days apart: a hold could lapse (14-day margin)
    ['expiryTimer', 'EXPIRY_TIMER_SCHEDULE', '0 */15 * * *'], // five fields
  ] as const)('%s with %s = %s: not registered, one error line naming the setting; the other entry points are untouched', (entry, name, value) => {
    const { [name]: _removed, ...rest } = VALID as Record<string, string>;
    const env = value === undefined ? rest : { ...VALID, [name]: value };
    const result = load(env, entry);
    expect(result.error).toBeUndefined();
    expect(result.registered).toEqual([]);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain(name);
    for (const other of (['payments', 'ordersConsumer', 'expiryTimer', 'http'] as const).filter((e) => e !== entry)) {
      const loaded = load(env, other);
      expect({ other, error: loaded.error, errors: loaded.errors }).toEqual({ other, error: undefined, errors: [] });
      expect(loaded.registered.length).toBeGreaterThan(0);
    }
  });

  test('DLQ_RESUBMIT_MARGIN_DAYS = 0 (resubmissions not covered): the timer registers with any schedule that runs, no error line; a schedule that never runs is still refused', () => {
    expect(load({ ...VALID, DLQ_RESUBMIT_MARGIN_DAYS: '0' }, 'expiryTimer')).toEqual({ error: undefined, registered: ['expiryTimer'], errors: [] });
    expect(load({ ...VALID, DLQ_RESUBMIT_MARGIN_DAYS: '0', EXPIRY_TIMER_SCHEDULE: '0 0 0 1,15 * *' }, 'expiryTimer')).toEqual({
      error: undefined,
      registered: ['expiryTimer'],
      errors: [],
    });
    const never = load({ ...VALID, DLQ_RESUBMIT_MARGIN_DAYS: '0', EXPIRY_TIMER_SCHEDULE: '0 0 0 31 2 *' }, 'expiryTimer');
    expect(never.registered).toEqual([]);
    expect(never.errors[0]).toMatch(/EXPIRY_TIMER_SCHEDULE "0 0 0 31 2 \*" never runs/);
  });

  test("a cold charge the deliveries cannot outlast stops the payments functions only (the rule is the charge's), naming the settings", () => {
    const env = { ...VALID, SERVICEBUS_MAX_DELIVERY_COUNT: '1' };
    const payments = load(env, 'payments');
    expect(payments.registered).toEqual([]);
    expect(payments.errors[0]).toMatch(/SERVICEBUS_MAX_DELIVERY_COUNT/);
    expect(load(env, 'ordersConsumer').registered).toEqual(['ordersConsumer']);
  });

  test.each([
    ['paymentsApi', 'SERVICEBUS_CONNECTION_STRING', undefined],
    ['paymentsApi', 'HTTP_CALLER_IDENTITY', 'anyone'],
    ['paymentProviderWebhook', 'WEBHOOK_SIGNING_SECRET', 'short'],
    ['paymentProviderWebhook', 'WEBHOOK_SIGNING_SECRET', undefined],
  ] as const)('http: %s with %s = %s stays registered (it answers 503) and one error line names the setting', (fn, name, value) => {
    const { [name]: _removed, ...rest } = VALID as Record<string, string>;
    const env = value === undefined ? rest : { ...VALID, [name]: value };
    const result = load(env, 'http');
    expect(result.error).toBeUndefined();
    expect(result.registered).toEqual(['paymentsApi', 'paymentStatus', 'paymentProviderWebhook']);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain(fn);
    expect(result.errors[0]).toContain(name);
    expect(load(env, 'payments').registered).toHaveLength(5);
  });
});
