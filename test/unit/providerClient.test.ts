/**
 * The HTTP provider client (src/payments/PaymentProviderClient.ts) against an injected `fetch`, edge by edge. What
 * each status means (409 in flight is transient, never a
 * rejection: the defect `conflict-rejected` of the simulator, here at its source; 408, 429, 500; 422 and other 4xx),
 * bodies it cannot read, the look-up's list with entries that are not a succeeded charge, the request it sends, the
 * base URL with or without a trailing slash, network errors and timeouts, the latency reported, the errors' flags.
 */
import {
  ChargeInFlightError,
  ChargeListUnsupportedError,
  LookupUnsupportedError,
  PaymentProviderClient,
  ProviderRefusedError,
  TransientProviderError,
} from '../../src/payments/PaymentProviderClient';

const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 700, currency: 'EUR' };
let requests: Array<{ url: string; method?: string; headers: Record<string, string>; body?: unknown }>;
let latencies: Array<[number, number | undefined]>;

beforeEach(() => {
  requests = [];
  latencies = [];
});

/** A client whose fetch answers `status` with `body` (a string as is, else its JSON), or rejects with `fails`. */
function client(answer: { status?: number; body?: unknown; fails?: unknown }, baseUrl = 'https://provider.example/api') {
  const fetch = async (url: URL | string, init?: RequestInit): Promise<Response> => {
    requests.push({ url: String(url), method: init?.method, headers: { ...(init?.headers as Record<string, string>) }, body: init?.body });
    if ('fails' in answer) throw answer.fails;
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
    return new Response(text, { status: answer.status ?? 200 });
  };
  return new PaymentProviderClient({
    baseUrl,
    timeoutMs: 5_000,
    fetch: fetch as typeof globalThis.fetch,
    onLatency: (ms, status) => void latencies.push([ms, status]),
  });
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as Error,
  );
}

describe('what a charge answer means', () => {
  test('409 (the key in flight) is transient, never a rejection', async () => {
    const error = await rejection(client({ status: 409, body: { error: { message: 'in flight' } } }).charge(payment, 'pay-1'));
    expect(error).toBeInstanceOf(TransientProviderError);
    expect(error.message).toBe('payment provider: a request with this key is still in flight (409)');
    expect((error as TransientProviderError).statusCode).toBe(409);
  });

  test.each([408, 500, 503])('%i is transient', async (status) => {
    const error = await rejection(client({ status }).charge(payment, 'pay-1'));
    expect(error).toBeInstanceOf(TransientProviderError);
    expect(error.message).toBe(`payment provider answered ${status}`);
  });

  test("429 (a rate limiter before the provider's idempotency) is not a result: refused, retryable", async () => {
    const error = await rejection(client({ status: 429 }).charge(payment, 'pay-1'));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toBe("payment provider answered 429 before its idempotency (without the provider's error body): not a result for this key");
  });

  test("422 with the provider's idempotency error is the key reused with another body; 400 with its error body a rejection; bare, neither", async () => {
    expect(await client({ status: 422, body: { error: { type: 'idempotency_error', message: 'other parameters' } } }).charge(payment, 'pay-1')).toEqual({
      status: 'rejected',
      reason: 'idempotency key used before with a different body (422)',
      code: 'idempotency-key-reused',
    });
    expect(await client({ status: 400, body: { error: { type: 'invalid_request_error', message: 'amount' } } }).charge(payment, 'pay-1')).toEqual({
      status: 'rejected',
      reason: 'payment provider answered 400 (invalid_request_error: amount)',
    });
    expect(await rejection(client({ status: 422 }).charge(payment, 'pay-1'))).toBeInstanceOf(ProviderRefusedError);
    expect(await rejection(client({ status: 400 }).charge(payment, 'pay-1'))).toBeInstanceOf(ProviderRefusedError);
  });

  test('only a 422 with the idempotency error is a key reused, only a 400 with an error body a rejection: a 400 with the idempotency error is a 400; a 422 of another type refused', async () => {
    expect(await client({ status: 400, body: { error: { type: 'idempotency_error', message: 'odd' } } }).charge(payment, 'pay-1')).toEqual({
      status: 'rejected',
      reason: 'payment provider answered 400 (idempotency_error: odd)',
    });
    const other = await rejection(client({ status: 422, body: { error: { type: 'invalid_request_error', message: 'amount' } } }).charge(payment, 'pay-1'));
    expect(other).toBeInstanceOf(ProviderRefusedError);
    expect(other.message).toBe('payment provider answered 422 before its idempotency (error invalid_request_error): not a result for this key');
  });

  test("a 400's reason: the provider's message cut at 120, nothing when it has none, the whole cut at 200", async () => {
    const reasonOf = async (error: unknown) => ((await client({ status: 400, body: { error } }).charge(payment, 'pay-1')) as { reason: string }).reason;
    expect(await reasonOf({ type: 'invalid_request_error', message: 'm'.repeat(300) })).toBe(
      `payment provider answered 400 (invalid_request_error: ${'m'.repeat(120)})`,
    );
    expect(await reasonOf({ type: 'invalid_request_error' })).toBe('payment provider answered 400 (invalid_request_error: )');
    expect(await reasonOf({ type: 't'.repeat(250), message: 'amount' })).toBe(`payment provider answered 400 (${'t'.repeat(250)}`.slice(0, 200));
  });

  test('another 4xx with an error body is refused naming its type', async () => {
    const error = await rejection(client({ status: 403, body: { error: { type: 'permission_error' } } }).charge(payment, 'pay-1'));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toBe('payment provider answered 403 before its idempotency (error permission_error): not a result for this key');
  });

  test("a success for this amount in another currency is the key's charge for another payment: a key reused, naming the charge", async () => {
    expect(await client({ status: 200, body: { id: 'ch_usd', status: 'succeeded', amount: 700, currency: 'USD' } }).charge(payment, 'pay-1')).toEqual({
      status: 'rejected',
      reason: 'idempotency key used before with a different body (the provider answered its charge ch_usd)',
      code: 'idempotency-key-reused',
    });
  });

  test("a success created at the payment's first moment is its own; one created a millisecond before is another payment's", async () => {
    const at = (created: number) => client({ status: 200, body: { id: 'ch_1', status: 'succeeded', amount: 700, currency: 'EUR', created } });
    expect(await at(5_000).charge(payment, 'pay-1', undefined, 5_000)).toEqual({ status: 'succeeded', chargeId: 'ch_1', amount: 700, currency: 'EUR' });
    expect(await at(4_999).charge(payment, 'pay-1', undefined, 5_000)).toMatchObject({ status: 'rejected', code: 'idempotency-key-reused' });
  });

  test("402: declined with the provider's reason cut at 200, or 'declined'", async () => {
    expect(await client({ status: 402, body: { reason: 'x'.repeat(300) } }).charge(payment, 'pay-1')).toEqual({ status: 'declined', reason: 'x'.repeat(200) });
    expect(await client({ status: 402, body: 'no json' }).charge(payment, 'pay-1')).toEqual({ status: 'declined', reason: 'declined' });
  });

  test('200 with a body that is not JSON, or without a succeeded charge: transient, saying which', async () => {
    await expect(client({ status: 201, body: 'oops' }).charge(payment, 'pay-1')).rejects.toThrow('payment provider answered 201 with a body that is not JSON');
    const failed = client({ status: 200, body: { id: 'ch_1', status: 'failed', amount: 700, currency: 'EUR' } });
    await expect(failed.charge(payment, 'pay-1')).rejects.toThrow('payment provider answered 200 without a succeeded charge id');
    // A charge still processing is a call in flight (retried), never a result.
    const pending = client({ status: 200, body: { id: 'ch_1', status: 'pending', amount: 700, currency: 'EUR' } });
    await expect(pending.charge(payment, 'pay-1')).rejects.toBeInstanceOf(ChargeInFlightError);
  });
});

describe('the look-up', () => {
  test('the first succeeded charge of the list: entries that are null, have no string id or did not succeed are skipped', async () => {
    const data = [
      null,
      'ch_x',
      { id: 5, status: 'succeeded' },
      { id: 'ch_p', status: 'pending' },
      { id: 'ch_ok', status: 'succeeded', amount: 700, currency: 'EUR' },
    ];
    expect(await client({ status: 200, body: { data } }).findCharge('pay-1')).toEqual({ status: 'succeeded', chargeId: 'ch_ok', amount: 700, currency: 'EUR' });
  });

  test("a charge created at the payment's first moment is listed as its own; one created a millisecond before is skipped", async () => {
    const data = [
      { id: 'ch_old', status: 'succeeded', amount: 700, currency: 'EUR', created: 4_999 },
      { id: 'ch_now', status: 'succeeded', amount: 700, currency: 'EUR', created: 5_000 },
    ];
    expect(await client({ status: 200, body: { data } }).findCharge('pay-1', undefined, 5_000)).toEqual({
      status: 'succeeded',
      chargeId: 'ch_now',
      amount: 700,
      currency: 'EUR',
    });
  });

  test('a body that is not JSON: transient, saying so', async () => {
    await expect(client({ status: 200, body: '<html>' }).findCharge('pay-1')).rejects.toThrow(
      'payment provider answered a charge look-up with a body that is not JSON',
    );
  });

  test('GET with the key as a parameter; the correlation id as a header only when there is one', async () => {
    await client({ status: 200, body: { data: [] } }).findCharge('pay 1', 'corr-1');
    await client({ status: 200, body: { data: [] } }).findCharge('pay-2');
    expect(requests.map((r) => [r.method, r.url, r.headers])).toEqual([
      ['GET', 'https://provider.example/api/v1/charges?idempotency_key=pay+1', { 'x-correlation-id': 'corr-1' }],
      ['GET', 'https://provider.example/api/v1/charges?idempotency_key=pay-2', {}],
    ]);
  });
});

describe('the request', () => {
  test('a charge: POST of the payment as JSON with its Idempotency-Key and correlation id', async () => {
    await client({ status: 201, body: { id: 'ch_1', status: 'succeeded', amount: 700, currency: 'EUR' } }).charge(payment, 'pay-1', 'corr-1');
    expect(requests).toEqual([
      {
        url: 'https://provider.example/api/v1/charges',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'pay-1', 'x-correlation-id': 'corr-1' },
        body: JSON.stringify(payment),
      },
    ]);
  });

  test('the base URL with or without its trailing slash: the same path under it', async () => {
    await client({ status: 200, body: { data: [] } }, 'https://provider.example/api/').findCharge('k');
    await client({ status: 200, body: { data: [] } }, 'https://provider.example/api').findCharge('k');
    expect(requests.map((r) => r.url)).toEqual([
      'https://provider.example/api/v1/charges?idempotency_key=k',
      'https://provider.example/api/v1/charges?idempotency_key=k',
    ]);
  });

  test('the latency and the status are reported for each call', async () => {
    await client({ status: 402 }).charge(payment, 'pay-1');
    expect(latencies).toHaveLength(1);
    expect(latencies[0][0]).toBeGreaterThanOrEqual(0);
    expect(latencies[0][0]).toBeLessThan(60_000);
    expect(latencies[0][1]).toBe(402);
  });
});

describe('no answer', () => {
  test.each(['TimeoutError', 'AbortError'])('%s: transient, "no answer within" the timeout, the cause kept', async (name) => {
    const cause = new DOMException('gave up', name);
    const error = await rejection(client({ fails: cause }).charge(payment, 'pay-1'));
    expect(error).toBeInstanceOf(TransientProviderError);
    expect(error.message).toBe('payment provider: no answer within 5000 ms');
    expect(error.cause).toBe(cause);
    expect((error as TransientProviderError).retryable).toBe(true);
  });

  test('a network error: transient, "request failed" with its message; a thrown non-error too', async () => {
    const error = await rejection(client({ fails: new TypeError('fetch failed') }).charge(payment, 'pay-1'));
    expect(error.message).toBe('payment provider: request failed (fetch failed)');
    const odd = await rejection(client({ fails: null }).charge(payment, 'pay-1'));
    expect(odd).toBeInstanceOf(TransientProviderError);
    expect(odd.message).toBe('payment provider: request failed (undefined)');
  });

  test('LookupUnsupportedError is not retryable', async () => {
    const error = await rejection(client({ status: 404 }).findCharge('pay-1'));
    expect(error).toBeInstanceOf(LookupUnsupportedError);
    expect((error as LookupUnsupportedError).retryable).toBe(false);
  });

  test('a charge answered still pending is a call in flight: retryable, with its charge id and status, saying it is not final yet', async () => {
    const pending = client({ status: 200, body: { id: 'ch_p', status: 'pending', amount: 700, currency: 'EUR' } });
    const error = (await rejection(pending.charge(payment, 'pay-1'))) as ChargeInFlightError;
    expect(error).toBeInstanceOf(ChargeInFlightError);
    expect(error.message).toBe('payment provider lists a charge under the key that is not final yet (ch_p): a call in flight, not "none"');
    expect([error.chargeId, error.statusCode, error.retryable]).toEqual(['ch_p', 200, true]);
  });

  test.each([404, 405, 501])('the charge list answered %i: no list offered (ChargeListUnsupportedError), never retried, naming the setting', async (status) => {
    const error = (await rejection(client({ status }).listCharges({ fromMs: 0, toMs: 1_000 }))) as ChargeListUnsupportedError;
    expect(error).toBeInstanceOf(ChargeListUnsupportedError);
    expect(error.message).toBe(
      `payment provider answered ${status} to the charge list: it offers no list of charges by time (PAYMENT_PROVIDER_LEDGER=list is wrong)`,
    );
    expect([error.statusCode, error.retryable]).toEqual([status, false]);
  });
});

describe('the list of charges', () => {
  const listed = (entry: Record<string, unknown>) => ({ id: 'ch_1', status: 'succeeded', amount: 700, currency: 'EUR', created: 1_500, ...entry });

  test('GET with the window in whole ms, the limit held to 1-100 (default 100), the cursor only when there is one', async () => {
    const c = client({ status: 200, body: { data: [] } });
    await c.listCharges({ fromMs: 1_000.9, toMs: 2_000.2 });
    await c.listCharges({ fromMs: 0, toMs: 10 }, 'ch_9', 0);
    await c.listCharges({ fromMs: 0, toMs: 10 }, '', 250);
    await c.listCharges({ fromMs: 0, toMs: 10 }, undefined, 42.7);
    expect(requests.map((r) => [r.method, r.url])).toEqual([
      ['GET', 'https://provider.example/api/v1/charges?created_gte=1000&created_lt=2000&limit=100'],
      ['GET', 'https://provider.example/api/v1/charges?created_gte=0&created_lt=10&limit=1&starting_after=ch_9'],
      ['GET', 'https://provider.example/api/v1/charges?created_gte=0&created_lt=10&limit=100'],
      ['GET', 'https://provider.example/api/v1/charges?created_gte=0&created_lt=10&limit=42'],
    ]);
  });

  test('each entry read as a listed charge: its key only when a non-empty string, amount and created as numbers', async () => {
    const page = await client({
      status: 200,
      body: {
        data: [
          listed({ idempotency_key: 'pay-1', amount: '700', created: '1500' }),
          listed({ id: 'ch_2', status: 'pending', idempotency_key: '', currency: 'USD' }),
          listed({ id: 'ch_3', status: 'failed', idempotency_key: 7 }),
        ],
        has_more: false,
      },
    }).listCharges({ fromMs: 0, toMs: 2_000 });
    expect(page).toStrictEqual({
      charges: [
        { id: 'ch_1', status: 'succeeded', amount: 700, currency: 'EUR', idempotencyKey: 'pay-1', createdMs: 1_500 },
        { id: 'ch_2', status: 'pending', amount: 700, currency: 'USD', idempotencyKey: undefined, createdMs: 1_500 },
        { id: 'ch_3', status: 'failed', amount: 700, currency: 'EUR', idempotencyKey: undefined, createdMs: 1_500 },
      ],
    });
  });

  test('has_more: the next cursor is the last charge listed; on an empty page the cursor sent (none: the window start); otherwise no cursor', async () => {
    const more = (data: unknown[], hasMore: unknown) => client({ status: 200, body: { data, has_more: hasMore } });
    await expect(more([listed({}), listed({ id: 'ch_2' })], true).listCharges({ fromMs: 0, toMs: 2_000 })).resolves.toMatchObject({ nextCursor: 'ch_2' });
    await expect(more([], true).listCharges({ fromMs: 0, toMs: 2_000 }, 'ch_7')).resolves.toStrictEqual({ charges: [], nextCursor: 'ch_7' });
    await expect(more([], true).listCharges({ fromMs: 0, toMs: 2_000 })).resolves.toStrictEqual({ charges: [], nextCursor: '' });
    await expect(more([listed({})], 'true').listCharges({ fromMs: 0, toMs: 2_000 })).resolves.not.toHaveProperty('nextCursor');
  });

  test.each([
    ['without an id', { id: undefined }],
    ['with an empty id', { id: '' }],
    ['with a status that is not a string', { status: 1 }],
    ['with an unknown status', { status: 'refunded' }],
    ['without a created time', { created: undefined }],
    ['with a created time that is not a number', { created: 'soon' }],
  ])('an entry %s: transient, the page unread', async (_what, entry) => {
    const error = await rejection(client({ status: 200, body: { data: [listed({ id: 'ch_ok' }), listed(entry)] } }).listCharges({ fromMs: 0, toMs: 2_000 }));
    expect(error).toBeInstanceOf(TransientProviderError);
    expect(error.message).toBe('payment provider listed a charge without an id, a known status or a created time');
    expect((error as TransientProviderError).statusCode).toBe(200);
  });

  test('an entry that is not an object (null, a string): transient, the page unread', async () => {
    for (const entry of [null, 'ch_1']) {
      const error = await rejection(client({ status: 200, body: { data: [entry] } }).listCharges({ fromMs: 0, toMs: 2_000 }));
      expect(error).toBeInstanceOf(TransientProviderError);
      expect(error.message).toBe('payment provider listed a charge without an id, a known status or a created time');
    }
  });

  test('any other status, a body that is not JSON, or no data list: transient, saying which', async () => {
    const list = (answer: { status?: number; body?: unknown }) => rejection(client(answer).listCharges({ fromMs: 0, toMs: 2_000 }));
    for (const status of [500, 429, 400, 201]) {
      const error = await list({ status, body: { data: [] } });
      expect(error).toBeInstanceOf(TransientProviderError);
      expect(error.message).toBe(`payment provider answered ${status} to the charge list`);
      expect((error as TransientProviderError).statusCode).toBe(status);
    }
    const notJson = await list({ status: 200, body: 'not json' });
    expect(notJson).toBeInstanceOf(TransientProviderError);
    expect(notJson.message).toBe('payment provider answered the charge list with a body that is not JSON');
    for (const body of [{}, { data: 'x' }]) {
      const noList = await list({ status: 200, body });
      expect(noList).toBeInstanceOf(TransientProviderError);
      expect(noList.message).toBe('payment provider answered the charge list without a data list');
    }
  });
});
