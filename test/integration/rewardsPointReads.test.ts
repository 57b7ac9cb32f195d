import { TableClient, type TransactionAction } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { randomBytes } from 'node:crypto';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { useAzurite } from '../support/azurite';
import { TableRowCounter, type TableTraffic } from '../support/tableRowCounter';
import { withTableLimits } from '../support/tableLimits';

/**
 * Issue 44.1: the identity index and the ledger read rows with point reads, so what a batch costs does not grow with
 * its partitions. The Table service runs `PartitionKey eq 'p' and (RowKey eq 'a' or RowKey eq 'b')` as a scan of the
 * partition (Table design guide, "Design for querying"); Azurite answers it fast on any size, so the test counts the
 * requests and their shape through a proxy instead of timing them: no query at all on the hot path, and the same
 * requests and rows returned per event beside a small partition and beside a large one (Azurite builds a partition in
 * quadratic time: tens of thousands of rows, not a million).
 */

const azuriteOf = useAzurite();
jest.setTimeout(300_000);

const HOT = 'cust-hot';
const LARGE_IDENTITIES = 20_000;
const LARGE_MARKERS = 10_000;

const cloudEvent = (paymentId: string, customerId: string) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id: `evt-${paymentId}`,
  datacontenttype: 'application/json',
  data: { paymentId, customerId, amount: 1000, currency: 'EUR' },
});

function hubContext(count: number): InvocationContext {
  return new InvocationContext({
    invocationId: `inv-${Math.random()}`,
    functionName: 'rewards',
    triggerMetadata: {
      partitionContext: { eventHubName: 'payments', consumerGroup: '$Default', partitionId: '0' },
      sequenceNumberArray: Array.from({ length: count }, (_, i) => i),
      propertiesArray: Array.from({ length: count }, () => ({})),
    },
    logHandler: () => undefined,
  });
}

/** `rows` rows in `partitionKey`, shaped like the ledger's (an identity row or a marker), 100 a transaction. */
async function seed(client: TableClient, partitionKey: string, rows: number, kind: string): Promise<void> {
  const groups: TransactionAction[][] = [];
  for (let i = 0; i < rows; i += 100) {
    groups.push(
      Array.from({ length: Math.min(100, rows - i) }, (): TransactionAction => [
        'create',
        { partitionKey, rowKey: `e-${randomBytes(32).toString('hex')}`, kind, digest: randomBytes(32).toString('hex'), customerId: HOT },
      ]),
    );
  }
  for (let i = 0; i < groups.length; i += 4) await Promise.all(groups.slice(i, i + 4).map((actions) => client.submitTransaction(actions)));
}

/** A batch: 20 events of the hot customer (whose partition is large or small), 20 across 4 others. */
function batch(tag: string): unknown[] {
  return Array.from({ length: 40 }, (_, i) => cloudEvent(`${tag}-${i}`, i < 20 ? HOT : `cust-${i % 4}`));
}

async function measure(partitionRows: { identities: number; markers: number }) {
  const name = `pr${randomBytes(6).toString('hex')}`;
  const direct = TableClient.fromConnectionString(azuriteOf().connectionString, name, { allowInsecureConnection: true });
  await direct.createTable();
  await seed(direct, 'i-0', partitionRows.identities, 'reward-identity');
  await seed(direct, RewardsLedger.partitionOf(HOT), partitionRows.markers, 'reward-event');
  const counter = await TableRowCounter.start(azuriteOf().connectionString);
  try {
    const client = withTableLimits(TableClient.fromConnectionString(counter.connectionString, name, { allowInsecureConnection: true }));
    const parkingName = `pp${randomBytes(6).toString('hex')}`;
    await direct
      .createTable()
      .then(() => TableClient.fromConnectionString(azuriteOf().connectionString, parkingName, { allowInsecureConnection: true }).createTable());
    const parking = new ParkingStore(TableClient.fromConnectionString(azuriteOf().connectionString, parkingName, { allowInsecureConnection: true }));
    const consumer = new RewardsConsumer({ ledger: new RewardsLedger(client), parking });
    const events = batch('b');
    counter.take();
    const fresh = await consumer.handleBatch(events, hubContext(events.length));
    const freshTraffic = counter.take();
    const replay = await consumer.handleBatch(events, hubContext(events.length));
    const replayTraffic = counter.take();
    expect(fresh).toMatchObject({ applied: 40, parked: 0 });
    expect(replay).toMatchObject({ applied: 0, duplicates: 40, parked: 0 });
    return { fresh: freshTraffic, replay: replayTraffic };
  } finally {
    await counter.stop();
  }
}

/** Rows Azure reads to answer the "or" queries: each scans its partition (the sizes seeded, plus what the batch added). */
const scanned = (t: TableTraffic, sizes: Record<string, number>) => t.orPartitions.reduce((sum, p) => sum + (sizes[p] ?? 0), 0);

const perEvent = (t: TableTraffic) =>
  `${t.pointReads + t.queries + t.transactions + t.other} requests (${t.pointReads} point reads, ${t.queries} queries, ${t.orQueries} "or", ` +
  `${t.transactions} transactions, ${t.other} other), ${t.rowsReturned} rows returned: ${((t.pointReads + t.queries + t.transactions + t.other) / 40).toFixed(2)} requests and ${(t.rowsReturned / 40).toFixed(2)} rows per event`;

test('a batch costs the same requests and rows beside a 20,000-row identity partition and a 10,000-row customer partition as beside empty ones: point reads, never an "or" scan', async () => {
  const small = await measure({ identities: 10, markers: 10 });
  const large = await measure({ identities: LARGE_IDENTITIES, markers: LARGE_MARKERS });
  const sizes = (n: { identities: number; markers: number }) => ({ 'i-0': n.identities + 40, [RewardsLedger.partitionOf(HOT)]: n.markers + 21 });
  const scans = (t: TableTraffic, n: { identities: number; markers: number }) => `; rows Azure scans for "or" queries: ${scanned(t, sizes(n))}`;
  const smallSize = { identities: 10, markers: 10 };
  const largeSize = { identities: LARGE_IDENTITIES, markers: LARGE_MARKERS };
  process.stdout.write(
    `rewards reads, 40 events (20 of a hot customer):\n` +
      `  small partitions, fresh:  ${perEvent(small.fresh)}${scans(small.fresh, smallSize)}\n  small partitions, replay: ${perEvent(small.replay)}${scans(small.replay, smallSize)}\n` +
      `  large partitions, fresh:  ${perEvent(large.fresh)}${scans(large.fresh, largeSize)}\n  large partitions, replay: ${perEvent(large.replay)}${scans(large.replay, largeSize)}\n`,
  );
  for (const traffic of [small.fresh, small.replay, large.fresh, large.replay]) {
    expect(traffic.orQueries).toBe(0);
    expect(traffic.queries).toBe(0); // every read names its row: what Azure reads per request is one row
  }
  expect(large.fresh).toEqual(small.fresh);
  expect(large.replay).toEqual(small.replay);
});
