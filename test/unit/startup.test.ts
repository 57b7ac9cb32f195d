const VALID = {
  IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
};

/** Loads registrations (default the payments ones) in a fresh module registry with exactly `env`. */
function loadPaymentsWith(env: Record<string, string>, entry: 'payments' | 'ordersConsumer' | 'expiryTimer' = 'payments'): unknown {
  const saved = process.env;
  process.env = { ...env };
  try {
    let error: unknown;
    jest.isolateModules(() => {
      try {
        require(`../../src/functions/${entry}`);
      } catch (e) {
        error = e;
      }
    });
    return error;
  } finally {
    process.env = saved;
  }
}

describe('app start (the Functions registrations)', () => {
  beforeAll(() => jest.spyOn(console, 'warn').mockImplementation(() => undefined));

  test('valid settings: the payments registrations load', () => {
    expect(loadPaymentsWith(VALID)).toBeUndefined();
  });

  test('a retention shorter than the redelivery window refuses to start, naming the settings', () => {
    const error = loadPaymentsWith({ ...VALID, IDEMPOTENCY_RETENTION_DAYS: '2' });
    // A fresh module registry has its own ConfigurationError class: compare the name.
    expect((error as Error).name).toBe('ConfigurationError');
    expect((error as Error).message).toMatch(/IDEMPOTENCY_RETENTION_DAYS/);
    expect((error as Error).message).toMatch(/SERVICEBUS_MESSAGE_TTL_SECONDS/);
  });

  test('a malformed or missing setting refuses to start, naming it', () => {
    expect((loadPaymentsWith({ ...VALID, IDEMPOTENCY_PARTITION_COUNT: 'many' }) as Error).message).toMatch(/IDEMPOTENCY_PARTITION_COUNT/);
    expect((loadPaymentsWith({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' }) as Error).message).toMatch(/PAYMENT_PROVIDER_URL/);
    expect((loadPaymentsWith({ PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9' }) as Error).message).toMatch(/IDEMPOTENCY_TABLE_ENDPOINT/);
  });

  test('every entry point reads the settings at load: the orders consumer and the expiry timer refuse to start too, naming the setting', () => {
    const orders = { ...VALID, COSMOS_ENDPOINT: 'https://127.0.0.1:9' };
    expect(loadPaymentsWith(orders, 'ordersConsumer')).toBeUndefined();
    expect(loadPaymentsWith(orders, 'expiryTimer')).toBeUndefined();
    expect((loadPaymentsWith(VALID, 'ordersConsumer') as Error).message).toMatch(/COSMOS_ENDPOINT/);
    expect((loadPaymentsWith({ ...orders, IDEMPOTENCY_RETENTION_DAYS: '2' }, 'expiryTimer') as Error).message).toMatch(/IDEMPOTENCY_RETENTION_DAYS/);
    expect((loadPaymentsWith({ ...orders, EXPIRY_SWEEP_BUDGET_SECONDS: 'soon' }, 'expiryTimer') as Error).message).toMatch(/EXPIRY_SWEEP_BUDGET_SECONDS/);
  });
});
