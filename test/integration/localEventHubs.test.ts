import { TableClient } from '@azure/data-tables';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { pointsFor } from '../../src/rewards/rewardEvent';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { AzuriteBlob } from '../../tools/azurite/AzuriteBlob';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { BlobCheckpointStore } from '../../tools/local/eventHubs/BlobCheckpointStore';
import { LocalEventHub } from '../../tools/local/eventHubs/LocalEventHub';
import { LocalEventHubsHost } from '../../tools/local/eventHubs/LocalEventHubsHost';
import { useAzurite } from '../support/azurite';
import { withTableLimits } from '../support/tableLimits';
import { freshTable } from '../support/tables';

/**
 * The rewards consumer on the local Event Hubs: an independent producer (with retries that append
 * duplicates) sends PaymentSucceeded events; two hosts share the partitions through ownership blobs on
 * Azurite, crash at random and are replaced (replays from the last checkpoint, partition moves); at the
 * end every customer's balance must equal the sum of the points of the distinct events produced.
 */
const azuriteOf = useAzurite();
let blobs: AzuriteBlob;
beforeAll(async () => {
  blobs = await AzuriteBlob.start();
});
afterAll(async () => {
  await blobs?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('crashing and moving hosts replay from checkpoints; every balance is the sum of the distinct events produced', async () => {
  const seed = Number(process.env.EH_SEED ?? 2026);
  const random = mulberry32(seed);
  const failures = mulberry32(seed + 1); // the handler's failures: their order depends on timing, the producer's sequence does not
  const hub = new LocalEventHub(`payments${seed}`, 4);
  const store = new BlobCheckpointStore(blobs.connectionString, hub.namespace, hub.name, '$Default');
  await store.ensureContainer();
  const table = await freshTable(azuriteOf(), 'eh');
  const parking = await freshTable(azuriteOf(), 'ehp');
  const consumer = () =>
    new RewardsConsumer({
      ledger: new RewardsLedger(
        withTableLimits(TableClient.fromConnectionString(azuriteOf().connectionString, table.tableName, { allowInsecureConnection: true })),
      ),
      parking: new ParkingStore(parking),
    });
  let replayed = 0;
  let applied = 0;
  const handlerOf = (c: RewardsConsumer) => async (bodies: unknown[], context: { triggerMetadata: Record<string, unknown> }) => {
    if (failures() < 0.05) throw new Error('transient failure (retried by the host)');
    const report = await c.handleBatch(bodies, context);
    replayed += report.duplicates;
    applied += report.applied;
  };
  let hosts: LocalEventHubsHost[] = [];
  const newHost = () => new LocalEventHubsHost(hub, store, handlerOf(consumer()), () => hosts.length, { ownershipExpiryMs: 300, maxBatchSize: 8 }).start();
  hosts = [newHost(), newHost()];

  // The producer: 240 events of 6 customers, partition key = customer; 15 % are sent twice (a retry after a lost ack).
  const expected = new Map<string, number>();
  for (let i = 0; i < 240; i++) {
    const customerId = `cust-${Math.floor(random() * 6)}`;
    const amount = 100 + Math.floor(random() * 10_000);
    const event = {
      specversion: '1.0',
      type: 'PaymentSucceeded',
      source: '/payments',
      id: `pay-${i}`,
      data: { paymentId: `pay-${i}`, customerId, amount, currency: 'EUR' },
    };
    expected.set(customerId, (expected.get(customerId) ?? 0) + pointsFor(amount));
    hub.send(event, { partitionKey: customerId });
    if (random() < 0.15) hub.send(event, { partitionKey: customerId });
    if (i % 40 === 39) {
      // A host crashes (its batch in flight is never checkpointed) and a new one starts: partitions move.
      const victim = Math.floor(random() * hosts.length);
      await hosts[victim].crash();
      hosts[victim] = newHost();
    }
    if (i % 10 === 0) await sleep(5);
  }
  // Wait until every partition is checkpointed at its end.
  const deadline = Date.now() + 90_000;
  while (!(await store.caughtUpWith(hub))) {
    if (Date.now() > deadline) throw new Error('the hosts did not reach the end of the hub in 90 s');
    await sleep(100);
  }
  await Promise.all(hosts.map((host) => host.crash()));
  const ledger = new RewardsLedger(table);
  for (const [customerId, points] of expected) expect(await ledger.balanceOf(customerId)).toBe(points);
  const produced = hub.partitions.reduce((sum, p) => sum + p.length, 0);
  console.log(
    `local Event Hubs (seed ${seed}): ${produced} events appended (240 distinct), ${applied} applied, ${replayed} duplicates skipped (producer retries and replays after crashes)`,
  );
  expect(applied).toBe(240);
  expect(replayed).toBeGreaterThanOrEqual(produced - 240); // at least every producer retry was seen and skipped
}, 180_000);
