import { RestError } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { StoreUnavailableError } from '../../src/core';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { pointsFor } from '../../src/rewards/rewardEvent';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { RoundTripCounter } from '../../tools/bench/RoundTripCounter';
import { useAzurite } from '../support/azurite';
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

async function rig(client?: TableClient) {
  const table = client ?? (await freshTable(azuriteOf(), 'rw'));
  const parkingTable = await freshTable(azuriteOf(), 'pk');
  const ledger = new RewardsLedger(table);
  const consumer = new RewardsConsumer({ ledger, parking: new ParkingStore(parkingTable) });
  return { table, parkingTable, ledger, consumer };
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

  test('round trips: a fresh batch costs 2 per customer (one query, one transaction); its replay 1 per customer', async () => {
    const { table, consumer } = await rig();
    const counter = RoundTripCounter.attach(table);
    const batch = ['c1', 'c2', 'c3'].flatMap((customerId) =>
      Array.from({ length: 5 }, (_, i) => cloudEvent({ paymentId: `${customerId}-${i}`, customerId, amount: 100 * (i + 1) })),
    );
    expect(await counter.measure(() => consumer.handleBatch(batch, hubContext(15)))).toBe(6);
    expect(await counter.measure(() => consumer.handleBatch(batch, hubContext(15)))).toBe(3);
    console.log('rewards, 15 events of 3 customers: fresh 6 round trips, replay 3 (one by one with a separate dedup store: 30 + 15 balance writes)');
  });

  test('two instances applying overlapping batches at once (a partition handover) never add an event twice', async () => {
    const { table, ledger } = await rig();
    const other = await rig(TableClient.fromConnectionString(azuriteOf().connectionString, table.tableName, { allowInsecureConnection: true }));
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
});
