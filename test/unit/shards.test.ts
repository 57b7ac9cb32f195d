import { ConfigurationError, keyFromMessageId } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { loadSettings } from '../../src/config/settings';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { MAX_SHARDS, shardLayoutOf, shardOf, shardQueue, ownedBy } from '../../src/payments/shards';
import { runPaymentsRetry } from '../../tools/operator/paymentsRetry';
import { inMemoryTelemetry } from '../support/telemetry';
import { PaymentRequestedSchema } from '../../src/payments/schema';
import { isMisdirected, misdirectedText, routeOf } from '../../src/payments/shardTables';

/** The settings with the table a consumer needs (any: these tests read the shard settings only). */
const settingsOf = (env: Record<string, string>) => loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', ...env });

/** Issue 52 item 1: payments routed to N task hubs by key. */
describe('routing a payment to its shard', () => {
  test('the rule is the documented one (first 32 bits of SHA-256, big-endian, mod N): fixed vectors a producer in any stack can check', () => {
    // sha256('pay-1') starts 0x0da3174c... : these values pin the rule; changing it moves every key (a migration).
    expect([2, 3, 5, 8].map((n) => shardOf('pay-1', n))).toEqual([2, 3, 5, 8].map((n) => 0x0da3174c % n));
    expect(shardOf('pay-1', 1)).toBe(0);
  });

  test('a key lands on one shard, always; 20,000 keys spread within 5 % of even over 5 shards', () => {
    const counts = new Array<number>(5).fill(0);
    for (let i = 0; i < 20_000; i++) counts[shardOf(`pay-${i}`, 5)]++;
    for (let i = 0; i < 100; i++) expect(shardOf(`pay-${i}`, 5)).toBe(shardOf(`pay-${i}`, 5));
    expect(Math.max(...counts) / (20_000 / 5)).toBeLessThan(1.05);
    expect(Math.min(...counts) / (20_000 / 5)).toBeGreaterThan(0.95);
  });

  test('a shard count outside 1..64 is refused', () => {
    for (const bad of [0, -1, 1.5, MAX_SHARDS + 1]) expect(() => shardOf('pay-1', bad)).toThrow(RangeError);
  });

  test("the layout from the settings: one shard is today's queue; shard i of N reads its queue's base off `<base>-<i>`; a name that does not say its shard, or an index outside N, is refused at start", () => {
    expect(shardLayoutOf(settingsOf({}))).toEqual({ count: 1, index: 0, baseQueue: 'payments' });
    const layout = shardLayoutOf(settingsOf({ PAYMENT_SHARD_COUNT: '3', PAYMENT_SHARD_INDEX: '2', PAYMENTS_QUEUE_NAME: 'payments-2' }));
    expect(layout).toEqual({ count: 3, index: 2, baseQueue: 'payments' });
    expect([0, 1, 2].map((shard) => shardQueue(layout, shard))).toEqual(['payments-0', 'payments-1', 'payments-2']);
    expect(shardQueue({ count: 1, baseQueue: 'payments' }, 0)).toBe('payments');
    expect(() => shardLayoutOf(settingsOf({ PAYMENT_SHARD_COUNT: '3', PAYMENT_SHARD_INDEX: '1', PAYMENTS_QUEUE_NAME: 'payments' }))).toThrow(
      /PAYMENTS_QUEUE_NAME must be <base>-1 on shard 1 of 3, got payments/,
    );
    expect(() => shardLayoutOf(settingsOf({ PAYMENT_SHARD_COUNT: '2', PAYMENT_SHARD_INDEX: '2', PAYMENTS_QUEUE_NAME: 'payments-2' }))).toThrow(
      ConfigurationError,
    );
    expect(() => settingsOf({ PAYMENT_SHARD_COUNT: '65' })).toThrow(/PAYMENT_SHARD_COUNT/);
  });

  test('a consumer parks a payment another shard owns, with the shard it belongs to, and claims nothing; it takes its own', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `pay-${i}`);
    const mine = ids.find((id) => shardOf(id, 2) === 0)!;
    const theirs = ids.find((id) => shardOf(id, 2) === 1)!;
    const store = new InMemoryIdempotencyStore({ leaseMs: 30_000 });
    const parked: Array<{ reason: string; detail: string }> = [];
    const starts: ChargeOrchestrationInput[] = [];
    const workflow: ChargeWorkflow = {
      status: async () => ({ state: 'none' }),
      start: async (_instanceId, input) => (starts.push(input), 'started'),
    };
    const parking = { park: async (entry: { reason: string; detail: string }) => void parked.push(entry) } as unknown as ParkingStore;
    const consumer = new PaymentsConsumer({
      store,
      parking,
      telemetry: inMemoryTelemetry().telemetry,
      waitBudgetMs: 10_000,
      design: 'handoff',
      shard: { count: 2, index: 0, baseQueue: 'payments' },
    }).withWorkflow(workflow);
    const payment = (paymentId: string) => ({ paymentId, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

    const refused = await consumer.handle(payment(theirs), { messageId: theirs, deliveryCount: 1 });
    expect(refused).toMatchObject({ outcome: 'parked' });
    expect((refused as { reason: string }).reason).toContain(`misrouted: payment ${theirs} belongs to shard 1 of 2, this is shard 0`);
    expect(parked).toHaveLength(1);
    expect(await store.get(keyFromMessageId('payments', theirs))).toBeUndefined();

    expect(await consumer.handle(payment(mine), { messageId: mine, deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
    expect(starts.map((s) => s.idempotencyKey)).toEqual([mine]);
  });

  test("an operator's retry pointed at a shard that does not own the payment is refused, naming the owner, before it reads anything", async () => {
    const id = 'pay-3';
    const owner = shardOf(id, 2);
    const lines: string[] = [];
    const env = {
      IDEMPOTENCY_TABLE_CONNECTION_STRING: 'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:9/a',
      PAYMENT_SHARD_COUNT: '2',
      PAYMENT_SHARD_INDEX: String(1 - owner),
      PAYMENTS_QUEUE_NAME: `payments-${1 - owner}`,
    };
    expect(await runPaymentsRetry(['--payment-id', id, '--durable-url', 'http://127.0.0.1:9/durabletask/'], env, (line) => lines.push(line))).toBe(1);
    expect(lines).toEqual([
      `refused: payment ${id} belongs to shard ${owner} of 2; these settings are shard ${1 - owner}'s: point IDEMPOTENCY_TABLE_* and --durable-url at shard ${owner} (PAYMENT_SHARD_INDEX=${owner})`,
    ]);
  });
});

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
