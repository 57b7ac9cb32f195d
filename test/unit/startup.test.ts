const VALID = {
  IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
};

/** Loads the payments registrations in a fresh module registry with exactly `env`. */
function loadPaymentsWith(env: Record<string, string>): unknown {
  const saved = process.env;
  process.env = { ...env };
  try {
    let error: unknown;
    jest.isolateModules(() => {
      try {
        require('../../src/functions/payments');
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
});
