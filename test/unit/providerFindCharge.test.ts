import { PaymentProviderClient, TransientProviderError } from '../../src/payments/PaymentProviderClient';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { chargeOnce } from '../../src/app/durableCharge';

/** The provider's charge look-up (`GET /v1/charges?idempotency_key=`), on the fake provider over loopback, and the client's `findCharge`. */
const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 700, currency: 'EUR' };

describe('charge look-up by Idempotency-Key', () => {
  let provider: FakePaymentProvider | undefined;
  afterEach(async () => provider?.stop());
  // An injected timeout hangs until the client gives up, so a long deadline costs nothing; 300 ms timed out plain answers on a busy machine.
  const client = () => new PaymentProviderClient({ baseUrl: provider!.url, timeoutMs: 5_000 });

  test('finds the charges made under the key from the ledger, even when the provider forgot the key (keyMemoryMs 0); none: undefined', async () => {
    provider = await FakePaymentProvider.start({ keyMemoryMs: 0 });
    expect(await client().findCharge('pay-1')).toBeUndefined();
    const charged = await client().charge(payment, 'pay-1');
    const found = await client().findCharge('pay-1');
    expect(found).toEqual(charged);
    expect(await client().findCharge('pay-2')).toBeUndefined();
    expect(provider.lookups).toBe(3);
    const listed = (await (await fetch(`${provider.url}/v1/charges?idempotency_key=pay-1`)).json()) as { data: unknown[] };
    expect(listed.data).toEqual([expect.objectContaining({ id: (charged as { chargeId: string }).chargeId, status: 'succeeded', amount: 700 })]);
    expect(provider.stats().lookups).toBe(4);
    expect(provider.effectiveCharges).toBe(1); // a look-up charges nothing
  });

  test('a look-up suffers 5xx and timeouts like a charge: findCharge throws TransientProviderError; chargeThenDrop queued for POSTs is not used by it', async () => {
    provider = await FakePaymentProvider.start();
    provider.injectNext('chargeThenDrop');
    provider.injectNextLookup('error5xx', 'timeout');
    await expect(client().findCharge('pay-1')).rejects.toThrow(/503 to a charge look-up/);
    await expect(client().findCharge('pay-1')).rejects.toThrow(TransientProviderError);
    expect(await client().findCharge('pay-1')).toBeUndefined();
    await expect(client().charge(payment, 'pay-1')).rejects.toThrow(TransientProviderError); // the queued drop
    expect(await client().findCharge('pay-1')).toMatchObject({ status: 'succeeded', amount: 700 });
    expect(provider.faultsInjected).toEqual({ error5xx: 1, timeout: 1, chargeThenDrop: 1 });
  });

  test('an answer that is not a list is transient; a missing key is refused (400)', async () => {
    provider = await FakePaymentProvider.start();
    const odd = new PaymentProviderClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 300, fetch: async () => new Response('{"x":1}', { status: 200 }) });
    await expect(odd.findCharge('k')).rejects.toThrow(/without a data list/);
    expect((await fetch(`${provider.url}/v1/charges?idempotency_key=`)).status).toBe(400);
  });
});

describe('the chargeProvider activity body (chargeOnce)', () => {
  const mine = { status: 'succeeded' as const, chargeId: 'ch_1', amount: 700, currency: 'EUR' };
  function stub(found: unknown) {
    const calls: string[] = [];
    return {
      calls,
      provider: {
        findCharge: async () => (calls.push('find'), found) as never,
        charge: async () => (calls.push('charge'), { ...mine, chargeId: 'ch_new' }),
      },
    };
  }
  const input = (lookUpFirst?: boolean) => ({ idempotencyKey: 'pay-1', payment, lookUpFirst });

  test('without lookUpFirst: charges, no look-up', async () => {
    const s = stub(mine);
    expect(await chargeOnce(s.provider, input())).toMatchObject({ chargeId: 'ch_new' });
    expect(s.calls).toEqual(['charge']);
  });

  test('lookUpFirst, the charge of this payment found: returned, no second charge', async () => {
    const s = stub(mine);
    expect(await chargeOnce(s.provider, input(true))).toEqual(mine);
    expect(s.calls).toEqual(['find']);
  });

  test('lookUpFirst, nothing found: charges', async () => {
    const s = stub(undefined);
    expect(await chargeOnce(s.provider, input(true))).toMatchObject({ chargeId: 'ch_new' });
    expect(s.calls).toEqual(['find', 'charge']);
  });

  test('lookUpFirst, a charge of another amount or currency under the key (a key reused after expiry): rejected as a reused key, never returned, never charged', async () => {
    for (const other of [
      { ...mine, amount: 999 },
      { ...mine, currency: 'USD' },
    ]) {
      const s = stub(other);
      expect(await chargeOnce(s.provider, input(true))).toEqual({
        status: 'rejected',
        reason: expect.stringContaining('different body'),
        code: 'idempotency-key-reused',
      });
      expect(s.calls).toEqual(['find']);
    }
  });
});
