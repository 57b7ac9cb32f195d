import { ConfigurationError } from 'azure-functions-idempotency';
import { PaymentRequestedSchema } from '../../src/payments/schema';
import { MAX_SHARDS, ownedBy, shardLayoutOf, shardOf } from '../../src/payments/shards';
import { isMisdirected, misdirectedText, routeOf } from '../../src/payments/shardTables';

/**
 * The shard rule's edges and the messages an operator reads (src/payments/shards.ts, shardTables.ts): the count's
 * bounds, the layout's refusals at start, the misrouted payment's reason, the misdirected route's sentence.
 */
const layoutOf = (count: number, index: number, queue: string) =>
  shardLayoutOf({ PAYMENT_SHARD_COUNT: count, PAYMENT_SHARD_INDEX: index, PAYMENTS_QUEUE_NAME: queue });
const payment = (paymentId: string) => ({ paymentId, customerId: 'cust-1', amount: 100, currency: 'EUR' });
/** The first of pay-0, pay-1, ... that shard `shard` of `count` owns. */
const ownedByShard = (shard: number, count: number) => {
  for (let i = 0; ; i++) if (shardOf(`pay-${i}`, count) === shard) return `pay-${i}`;
};

describe('shardOf: the count', () => {
  test('1 and 64 are shard counts; 0, 65 and a fraction are refused with the rule in the message', () => {
    expect(shardOf('pay-1', 1)).toBe(0);
    expect(shardOf('pay-1', MAX_SHARDS)).toBe(0x0da3174c % 64);
    expect(MAX_SHARDS).toBe(64);
    for (const bad of [0, 65, 2.5]) expect(() => shardOf('pay-1', bad)).toThrow(`a shard count is an integer from 1 to 64, got ${bad}`);
  });

  test('the hash is of the UTF-8 bytes: a key outside ASCII has its own, stable shard', () => {
    // sha256 of 'payé' (UTF-8: 70 61 79 c3 a9) starts 0x36e0bcfd; latin1 (70 61 79 e9) would start 0x4fddb808.
    const counts = [2, 3, 5, 7, 11, 13, 64];
    expect(counts.map((n) => shardOf('payé', n))).toEqual(counts.map((n) => 0x36e0bcfd % n));
  });
});

describe('shardLayoutOf: refused at start', () => {
  test('an index outside N names the valid range', () => {
    expect(() => layoutOf(3, 3, 'payments-3')).toThrow(new ConfigurationError('PAYMENT_SHARD_INDEX 3 is not a shard of 3 (0 to 2)'));
    expect(() => layoutOf(1, 1, 'payments')).toThrow('PAYMENT_SHARD_INDEX 1 is not a shard of 1 (0 to 0)');
  });

  test('the last index is a shard; one shard keeps the queue name whole, whatever its end', () => {
    expect(layoutOf(4, 3, 'pay-q-3')).toEqual({ count: 4, index: 3, baseQueue: 'pay-q' });
    expect(layoutOf(1, 0, 'payments-7')).toEqual({ count: 1, index: 0, baseQueue: 'payments-7' });
  });

  test('a queue named only by its suffix (no base) is refused, with the expected shape and the name given', () => {
    expect(() => layoutOf(2, 1, '-1')).toThrow(new ConfigurationError('PAYMENTS_QUEUE_NAME must be <base>-1 on shard 1 of 2, got -1'));
    expect(layoutOf(12, 11, 'payments-11').baseQueue).toBe('payments');
    expect(() => layoutOf(2, 0, 'payments-1')).toThrow('PAYMENTS_QUEUE_NAME must be <base>-0 on shard 0 of 2, got payments-1');
  });
});

describe('ownedBy: the schema shard i accepts', () => {
  test('no layout, or one shard: the schema itself', () => {
    expect(ownedBy(PaymentRequestedSchema, undefined)).toBe(PaymentRequestedSchema);
    expect(ownedBy(PaymentRequestedSchema, { count: 1, index: 0 })).toBe(PaymentRequestedSchema);
  });

  test("another shard's payment is refused with one issue naming its owner; an owned one passes as it is", () => {
    const schema = ownedBy(PaymentRequestedSchema, { count: 3, index: 1 });
    const mine = ownedByShard(1, 3);
    expect(schema.safeParse(payment(mine))).toEqual({ success: true, data: payment(mine) });
    const theirs = ownedByShard(2, 3);
    const refused = schema.safeParse(payment(theirs));
    expect(refused.success).toBe(false);
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({ code: 'custom', message: `misrouted: payment ${theirs} belongs to shard 2 of 3, this is shard 1` }),
    ]);
  });
});

describe('shardTables: the misdirected route', () => {
  test("the refusal's sentence names the owner, the count, this shard and the missing map", () => {
    const id = ownedByShard(1, 2);
    const route = routeOf(id, { count: 2, index: 0 }, undefined);
    expect(route).toEqual({ kind: 'misdirected', shard: 1, count: 2, index: 0 });
    expect(misdirectedText(id, route as Extract<typeof route, { kind: 'misdirected' }>)).toBe(
      `payment ${id} belongs to shard 1 of 2, this is shard 0 (no PAYMENT_SHARD_TABLE_ENDPOINTS to reach it)`,
    );
  });

  test('isMisdirected: only the misdirected route; not the other routes, nor undefined, nor null, nor a string, nor a thing without a kind', () => {
    expect(isMisdirected(undefined)).toBe(false); // a route not found yet: no TypeError
    expect(isMisdirected({ kind: 'misdirected', shard: 1, count: 2, index: 0 })).toBe(true);
    expect(isMisdirected({ kind: 'here', shard: 0 })).toBe(false);
    expect(isMisdirected({ kind: 'owner', shard: 1, endpoint: 'https://a.table.core.windows.net/' })).toBe(false);
    expect(isMisdirected(null)).toBe(false);
    expect(isMisdirected('misdirected')).toBe(false);
    expect(isMisdirected({ table: 'payments' })).toBe(false);
  });
});
