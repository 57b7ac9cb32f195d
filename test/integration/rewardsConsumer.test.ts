import { RestError } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { pointsFor } from '../../src/rewards/rewardEvent';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { RoundTripCounter } from '../../tools/bench/RoundTripCounter';
import { FailureStrikes } from '../../src/messaging/failureStrikes';
import { Telemetry, type CounterName } from '../../src/telemetry/Telemetry';
import { useAzurite } from '../support/azurite';
import { tableLimitViolations, withTableLimits } from '../support/tableLimits';
import { freshTable } from '../support/tables';

const azuriteOf = useAzurite();

interface Payment {
  paymentId: string;
  customerId: string;
  amount: number;
}

/** A `PaymentSucceeded` CloudEvent in structured mode, as the producer sends it. */
const cloudEvent = (p: Payment, id = `evt-${p.paymentId}`) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id,
  datacontenttype: 'application/json',
  data: { ...p, currency: 'EUR' },
});

/** An Event Hubs batch context (cardinality many) as the v4 worker builds it. */
function hubContext(count: number, firstSequence = 0): InvocationContext {
  return new InvocationContext({
    invocationId: `inv-${Math.random()}`,
    functionName: 'rewards',
    triggerMetadata: {
      partitionContext: { eventHubName: 'payments', consumerGroup: '$Default', partitionId: '0' },
      sequenceNumberArray: Array.from({ length: count }, (_, i) => firstSequence + i),
      offsetArray: Array.from({ length: count }, (_, i) => String(1000 * (firstSequence + i))),
      propertiesArray: Array.from({ length: count }, () => ({})),
    },
    logHandler: () => undefined,
  });
}

async function rig(client?: TableClient, parking?: TableClient) {
  const table = client ?? (await freshTable(azuriteOf(), 'rw'));
  const parkingTable = parking ?? (await freshTable(azuriteOf(), 'pk'));
  const ledger = new RewardsLedger(table);
  const telemetry = new RecordingTelemetry();
  const strikes = new FailureStrikes(parkingTable);
  const consumer = new RewardsConsumer({ ledger, parking: new ParkingStore(parkingTable), telemetry, strikes });
  return { table, parkingTable, ledger, consumer, telemetry };
}

/** The same table through another client (another host), with the check of Azure's limits. */
const sameTable = (table: TableClient) =>
  withTableLimits(TableClient.fromConnectionString(azuriteOf().connectionString, table.tableName, { allowInsecureConnection: true }));

/** Counts what the consumer counts (metric name and dimensions) and nothing else. */
class RecordingTelemetry extends Telemetry {
  readonly counted: Array<{ name: string; dimensions: Record<string, unknown>; value: number }> = [];
  override count(name: CounterName, dimensions: Record<string, string | number | boolean> = {}, value = 1): void {
    this.counted.push({ name, dimensions, value });
  }
  total(name: string, where: Record<string, unknown> = {}): number {
    return this.counted.filter((c) => c.name === name && Object.entries(where).every(([k, v]) => c.dimensions[k] === v)).reduce((sum, c) => sum + c.value, 0);
  }
}

async function parkedReasons(client: TableClient): Promise<string[]> {
  const reasons: string[] = [];
  for await (const row of client.listEntities<{ reason: string }>()) reasons.push(row.reason);
  return reasons.sort();
}

describe('rewards consumer: marker and balance in one transaction per customer (Azurite)', () => {
  test('balances are the sum of distinct events: a producer retry in the batch, a replayed batch and a retry in a later batch count once', async () => {
    const { ledger, consumer } = await rig();
    const p = (n: number, customerId: string, amount: number): Payment => ({ paymentId: `pay-${n}`, customerId, amount });
    const batch = [cloudEvent(p(1, 'alice', 1250)), cloudEvent(p(2, 'bob', 999)), cloudEvent(p(1, 'alice', 1250)), cloudEvent(p(3, 'alice', 30_000))];
    const first = await consumer.handleBatch(batch, hubContext(4));
    expect(first).toMatchObject({ applied: 3, duplicates: 1, parked: 0 });
    expect(await ledger.balanceOf('alice')).toBe(pointsFor(1250) + pointsFor(30_000));
    expect(await ledger.balanceOf('bob')).toBe(pointsFor(999));
    const replay = await consumer.handleBatch(batch, hubContext(4)); // the host replays from its checkpoint
    expect(replay).toMatchObject({ applied: 0, duplicates: 4 });
    const later = await consumer.handleBatch([cloudEvent(p(2, 'bob', 999)), cloudEvent(p(4, 'bob', 100))], hubContext(2, 4)); // retry appended: new sequence number
    expect(later).toMatchObject({ applied: 1, duplicates: 1 });
    expect(await ledger.balanceOf('alice')).toBe(12 + 300);
    expect(await ledger.balanceOf('bob')).toBe(9 + 1);
  });

  test('round trips: one point read per event and per customer (its balance), never a query; fresh + 1 transaction per customer and 1 per 100 new identities', async () => {
    const { table, consumer } = await rig();
    const counter = RoundTripCounter.attach(table);
    const batch = ['c1', 'c2', 'c3'].flatMap((customerId) =>
      Array.from({ length: 5 }, (_, i) => cloudEvent({ paymentId: `${customerId}-${i}`, customerId, amount: 100 * (i + 1) })),
    );
    // 15 marker reads + 3 balance reads, then 1 identity transaction + 3 customer transactions; the replay reads only.
    // Once per host, the identity index's layout row (issue 44.6): read, and on a new table written: + 2.
    expect(await counter.measure(() => consumer.handleBatch(batch, hubContext(15)))).toBe(15 + 3 + 1 + 3 + 2);
    expect(await counter.measure(() => consumer.handleBatch(batch, hubContext(15)))).toBe(15 + 3);
    // A full Event Hubs batch (maxEventBatchSize 100): 100 events of 8 customers (7 x 13 + 9), as a partition keyed by customer sends them.
    const full = Array.from({ length: 100 }, (_, i) => cloudEvent({ paymentId: `f-${i}`, customerId: `fc-${Math.floor(i / 13)}`, amount: 100 + i }));
    const fresh = await counter.measure(() => consumer.handleBatch(full, hubContext(100)));
    const replay = await counter.measure(() => consumer.handleBatch(full, hubContext(100)));
    expect([fresh, replay]).toEqual([100 + 8 + 1 + 8, 100 + 8]);
    console.log(
      `rewards round trips: 15 events of 3 customers fresh 22 (+2 for the layout row, once per host), replay 18; 100 events of 8 customers fresh ${fresh} (${fresh / 100} per event), replay ${replay} (${replay / 100} per event)`,
    );
  });

  test('two instances applying overlapping batches at once (a partition handover) never add an event twice', async () => {
    const { table, ledger } = await rig();
    const other = await rig(sameTable(table));
    const random = mulberry32(24);
    const produced = new Map<string, { customerId: string; points: number }>();
    for (let round = 0; round < 8; round++) {
      const events = Array.from({ length: 30 }, (_, i) => {
        const customerId = `cust-${Math.floor(random() * 3)}`;
        const payment = { paymentId: `r${round}-${i}`, customerId, amount: 100 + Math.floor(random() * 5000) };
        produced.set(payment.paymentId, { customerId, points: pointsFor(payment.amount) });
        return cloudEvent(payment);
      });
      const cut = Math.floor(random() * 20);
      // Instance A still works on the old batch; instance B, the partition's new owner, replays from an older
      // checkpoint (overlapping A's events) and goes on with newer ones: the same customers, at the same time.
      await Promise.all([
        (await rig(table)).consumer.handleBatch(events.slice(0, 20), hubContext(20)),
        other.consumer.handleBatch(events.slice(cut), hubContext(30 - cut)),
      ]);
    }
    for (const customerId of ['cust-0', 'cust-1', 'cust-2']) {
      const expected = [...produced.values()].filter((e) => e.customerId === customerId).reduce((sum, e) => sum + e.points, 0);
      expect(await ledger.balanceOf(customerId)).toBe(expected);
    }
  });

  test('a transaction whose answer is lost after it landed, or that is refused, is counted exactly once after the retry', async () => {
    const { table, ledger, consumer } = await rig();
    let mode: 'lose' | 'refuse' | 'none' = 'lose';
    table.pipeline.addPolicy(
      {
        name: 'batchFaults',
        sendRequest: async (request, next) => {
          if (mode === 'none' || !request.url.includes('$batch')) return next(request);
          if (mode === 'refuse') throw new RestError('connect ECONNREFUSED', { code: 'ECONNREFUSED', request }); // every try
          mode = 'none';
          await next(request);
          throw new RestError('socket hang up (answer lost)', { code: 'ECONNRESET', request });
        },
      },
      { afterPhase: 'Retry' },
    );
    const batch = [cloudEvent({ paymentId: 'x1', customerId: 'carol', amount: 5000 })];
    const lost = await consumer.handleBatch(batch, hubContext(1)).catch((e: unknown) => e);
    // The SDK retried the landed transaction: its markers made the retry fail as a whole, and the
    // ledger read again and found the event applied; or the error surfaced and the host retries.
    if (lost instanceof Error) expect(lost).toBeInstanceOf(StoreUnavailableError);
    await consumer.handleBatch(batch, hubContext(1));
    expect(await ledger.balanceOf('carol')).toBe(50);
    mode = 'refuse';
    const next = [cloudEvent({ paymentId: 'x2', customerId: 'carol', amount: 1000 })];
    await expect(consumer.handleBatch(next, hubContext(1))).rejects.toBeInstanceOf(StoreUnavailableError);
    mode = 'none';
    expect(await ledger.balanceOf('carol')).toBe(50);
    await consumer.handleBatch(next, hubContext(1));
    expect(await ledger.balanceOf('carol')).toBe(60);
  });

  test('events no retry can fix are parked with their reason; other event types are ignored; balances untouched', async () => {
    const { ledger, consumer, parkingTable } = await rig();
    await consumer.handleBatch([cloudEvent({ paymentId: 'k1', customerId: 'dave', amount: 700 })], hubContext(1));
    const report = await consumer.handleBatch(
      [
        { data: { paymentId: 'n1', customerId: 'dave', amount: 100, currency: 'EUR' } }, // not a CloudEvent: no identity
        { ...cloudEvent({ paymentId: 'n2', customerId: 'dave', amount: 100 }), source: undefined }, // incomplete
        cloudEvent({ paymentId: 'n3', customerId: 'dave', amount: -5 }), // bad data
        cloudEvent({ paymentId: 'k1', customerId: 'dave', amount: 99_999 }), // same event id, other data
        { ...cloudEvent({ paymentId: 'n4', customerId: 'dave', amount: 100 }), type: 'PaymentRefunded' },
      ],
      hubContext(5),
    );
    expect(report).toMatchObject({ applied: 0, parked: 4, ignored: 1 });
    expect(await parkedReasons(parkingTable)).toEqual(['invalid-schema', 'key-reused', 'missing-event-id', 'missing-event-id']);
    expect(await ledger.balanceOf('dave')).toBe(7);
  });

  test("identity is the consumer's: the same CloudEvent id for another customer, in the same batch or a later one, is parked key-reused and counted, never applied", async () => {
    const { ledger, consumer, parkingTable, telemetry } = await rig();
    const same = await consumer.handleBatch(
      [
        cloudEvent({ paymentId: 'r1', customerId: 'erin', amount: 1000 }, 'evt-shared'),
        cloudEvent({ paymentId: 'r2', customerId: 'frank', amount: 5000 }, 'evt-shared'),
      ],
      hubContext(2),
    );
    expect(same).toMatchObject({ applied: 1, parked: 1 });
    const later = await consumer.handleBatch([cloudEvent({ paymentId: 'r3', customerId: 'gina', amount: 7000 }, 'evt-shared')], hubContext(1, 2));
    expect(later).toMatchObject({ applied: 0, parked: 1 });
    const replay = await consumer.handleBatch([cloudEvent({ paymentId: 'r1', customerId: 'erin', amount: 1000 }, 'evt-shared')], hubContext(1, 3));
    expect(replay).toMatchObject({ applied: 0, duplicates: 1, parked: 0 });
    expect([await ledger.balanceOf('erin'), await ledger.balanceOf('frank'), await ledger.balanceOf('gina')]).toEqual([10, 0, 0]);
    expect(await parkedReasons(parkingTable)).toEqual(['key-reused', 'key-reused']);
    expect(telemetry.total('idempotency.key_reuse', { consumer: 'rewards' })).toBe(2); // what alert-key-reuse.kql sums
  });

  test('two hosts racing on real Azurite with one identity under two customers: exactly one payload applied, the other parked key-reused, each round', async () => {
    const a = await rig();
    const b = await rig(sameTable(a.table), sameTable(a.parkingTable));
    const rounds = 12;
    for (let round = 0; round < rounds; round++) {
      const id = `evt-race-${round}`;
      const good = (n: number) => cloudEvent({ paymentId: `g-${round}-${n}`, customerId: `cust-${n % 3}`, amount: 100 });
      await Promise.all([
        a.consumer.handleBatch([good(1), cloudEvent({ paymentId: `pa-${round}`, customerId: 'hank', amount: 100 }, id), good(2)], hubContext(3)),
        b.consumer.handleBatch([good(2), cloudEvent({ paymentId: `pb-${round}`, customerId: 'ivy', amount: 200 }, id), good(1)], hubContext(3)),
      ]);
    }
    const hank = await a.ledger.balanceOf('hank');
    const ivy = await a.ledger.balanceOf('ivy');
    expect(hank / 1 + ivy / 2).toBe(rounds); // each round, exactly one of the two payloads counted
    expect((await parkedReasons(a.parkingTable)).filter((r) => r === 'key-reused')).toHaveLength(rounds);
    for (const n of [0, 1, 2]) expect(await a.ledger.balanceOf(`cust-${n}`)).toBe([1, 2].filter((k) => k % 3 === n).length * rounds);
    expect(tableLimitViolations).toEqual([]);
  });

  test('a batch that fails the same way on one event (not an outage) is thrown twice, then that event is parked repeated-failure and the others applied', async () => {
    const { table, ledger, consumer, parkingTable, telemetry } = await rig();
    const poison = RewardsLedger.partitionOf('poison');
    table.pipeline.addPolicy({
      name: 'refuseOneCustomer', // a request the service refuses for this customer's partition, every time
      sendRequest: async (request, next) => {
        if (request.url.includes('$batch') && String(request.body).includes(poison))
          throw new RestError('The request is invalid', { statusCode: 400, request });
        return next(request);
      },
    });
    const batch = [
      cloudEvent({ paymentId: 'p1', customerId: 'jo', amount: 100 }),
      cloudEvent({ paymentId: 'p2', customerId: 'poison', amount: 100 }),
      cloudEvent({ paymentId: 'p3', customerId: 'kim', amount: 100 }),
    ];
    await expect(consumer.handleBatch(batch, hubContext(3, 50))).rejects.toThrow(/rejected applyRewards/);
    await expect(consumer.handleBatch(batch, hubContext(3, 50))).rejects.toThrow(/rejected applyRewards/);
    const third = await consumer.handleBatch(batch, hubContext(3, 50));
    expect(third).toMatchObject({ parked: 1 });
    expect(await parkedReasons(parkingTable)).toEqual(['repeated-failure']);
    expect([await ledger.balanceOf('jo'), await ledger.balanceOf('kim')]).toEqual([1, 1]);
    expect(telemetry.total('messages.batch_failures', { kind: 'error', partitionId: '0' })).toBe(3);
    // A store that is unavailable is never counted as a strike: retried without end, nothing parked.
    const down = await rig();
    down.table.pipeline.addPolicy(
      { name: 'down', sendRequest: async (request) => Promise.reject(new RestError('connect ECONNREFUSED', { code: 'ECONNREFUSED', request })) },
      { afterPhase: 'Retry' },
    );
    for (let i = 0; i < 4; i++) await expect(down.consumer.handleBatch(batch, hubContext(3, 50))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await parkedReasons(down.parkingTable)).toEqual([]);
    expect(down.telemetry.total('messages.batch_failures', { kind: 'unavailable' })).toBe(4);
  });
  test('a binary-mode batch whose propertiesArray is longer than its events (the host dropped an empty text event) is parked missing-event-id, never keyed by a neighbour', async () => {
    const { ledger, consumer, parkingTable } = await rig();
    // Binary mode: the CloudEvent attributes travel in each event's properties, the body is the data alone.
    const props = (id: string) => ({
      'cloudEvents:specversion': '1.0',
      'cloudEvents:type': 'PaymentSucceeded',
      'cloudEvents:source': '/payments',
      'cloudEvents:id': id,
    });
    const data = (n: number) => ({ paymentId: `b-${n}`, customerId: 'carol', amount: 500 + n, currency: 'EUR' });
    const context = hubContext(2);
    // Three events were sent; the first had an empty body and was dropped from the text batch, its properties kept (ToRpcStringArray).
    context.triggerMetadata!.propertiesArray = [props('evt-empty'), props('evt-1'), props('evt-2')];
    const report = await consumer.handleBatch([JSON.stringify(data(1)), JSON.stringify(data(2))], context);
    expect(report).toMatchObject({ applied: 0, parked: 2 });
    expect(await ledger.balanceOf('carol')).toBe(0);
    expect(await parkedReasons(parkingTable)).toEqual(['missing-event-id', 'missing-event-id']);
  });
});
