import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';

/** The fake provider's memory of Idempotency-Keys, on its own clock (Stripe keeps keys 24 hours). Over loopback HTTP. */
const HOUR_MS = 3_600_000;

async function charge(provider: FakePaymentProvider, key: string, amount = 100) {
  const response = await fetch(`${provider.url}/v1/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ paymentId: key, customerId: 'c1', amount, currency: 'EUR' }),
  });
  return { status: response.status, body: (await response.json()) as { id?: string } };
}

describe('FakePaymentProvider key memory', () => {
  let provider: FakePaymentProvider | undefined;
  afterEach(async () => provider?.stop());

  test('by default a key is remembered forever: a replay, never a second charge', async () => {
    let now = 0;
    provider = await FakePaymentProvider.start({ clock: () => now });
    const first = await charge(provider, 'pay-1');
    now += 1_000 * 24 * HOUR_MS;
    const again = await charge(provider, 'pay-1');
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.id).toBe(first.body.id);
    expect(provider.chargesFor('pay-1')).toBe(1);
    expect(provider.forgetsKeys).toBe(false);
  });

  test('with keyMemoryMs 24 h: a replay within the day, a second charge after it (as Stripe would)', async () => {
    let now = 0;
    provider = await FakePaymentProvider.start({ clock: () => now, keyMemoryMs: 24 * HOUR_MS });
    expect((await charge(provider, 'pay-1')).status).toBe(201);
    now += 23 * HOUR_MS;
    expect((await charge(provider, 'pay-1')).status).toBe(200);
    now += 2 * HOUR_MS;
    expect((await charge(provider, 'pay-1')).status).toBe(201);
    expect(provider.chargesFor('pay-1')).toBe(2);
    expect(provider.stats()).toMatchObject({ forgottenKeysReused: 1, doubleCharged: ['pay-1'] });
    // A forgotten key with another body is a new charge too, not a 422.
    now += 25 * HOUR_MS;
    expect((await charge(provider, 'pay-1', 999)).status).toBe(201);
  });
});
