import { makeIdempotentBatch, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { AzuriteBlob } from '../../tools/azurite/AzuriteBlob';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { BlobCheckpointStore } from '../../tools/local/eventHubs/BlobCheckpointStore';
import { LocalEventHub } from '../../tools/local/eventHubs/LocalEventHub';
import { LocalEventHubsHost } from '../../tools/local/eventHubs/LocalEventHubsHost';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

/**
 * makeIdempotentBatch on the Table store behind the local Event Hubs: hosts crash and are replaced while
 * batches run (partitions move, the new owner replays from the checkpoint while the old one may still be
 * finishing), producers retry. Invariants: every distinct event's work runs exactly once, and within a
 * partition the work runs in the partition's order.
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

test('crashing hosts and producer retries: each distinct event runs once, in its partition order', async () => {
  const random = mulberry32(77);
  const jitter = mulberry32(78); // the handler's pauses: their order depends on timing, the producer's sequence does not
  const hub = new LocalEventHub('orders77', 3);
  const checkpoints = new BlobCheckpointStore(blobs.connectionString, hub.namespace, hub.name, '$Default');
  await checkpoints.ensureContainer();
  const store = new TableIdempotencyStore(await freshTable(azuriteOf(), 'bt'), { retentionMs: 86_400_000, leaseMs: 5_000 });
  const runs = new Map<string, number>();
  const order = new Map<string, number[]>(); // partition key -> event numbers in the order their work ran
  const handler = makeIdempotentBatch(
    async (event: { id: string; data: { n: number; key: string } }) => {
      runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
      const list = order.get(event.data.key) ?? [];
      list.push(event.data.n);
      order.set(event.data.key, list);
      await sleep(jitter() * 4);
      return { done: event.data.n };
    },
    { store, consumer: 'batch-test', park: async () => Promise.reject(new Error('nothing should be parked')), pollMs: 20 },
  );
  let hosts: LocalEventHubsHost[] = [];
  const newHost = () =>
    new LocalEventHubsHost(
      hub,
      checkpoints,
      (bodies, context) => handler(bodies as never[], context),
      () => hosts.length,
      {
        ownershipExpiryMs: 300,
        maxBatchSize: 6,
      },
    ).start();
  hosts = [newHost(), newHost()];
  const counters = new Map<string, number>();
  for (let i = 0; i < 150; i++) {
    const key = `k${Math.floor(random() * 9)}`; // partition key: events of one key stay in one partition
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n);
    const event = { specversion: '1.0', type: 'Work', source: `/keys/${key}`, id: `${key}-${n}`, data: { n: i, key } };
    hub.send(event, { partitionKey: key });
    if (random() < 0.1) hub.send(event, { partitionKey: key }); // a producer retry
    if (i % 30 === 29) {
      const victim = Math.floor(random() * hosts.length);
      await hosts[victim].crash();
      hosts[victim] = newHost();
    }
    if (i % 10 === 0) await sleep(5);
  }
  const deadline = Date.now() + 90_000;
  while (!(await checkpoints.caughtUpWith(hub))) {
    if (Date.now() > deadline) throw new Error('the hosts did not reach the end of the hub in 90 s');
    await sleep(100);
  }
  await Promise.all(hosts.map((host) => host.crash()));
  expect(runs.size).toBe(150);
  expect([...runs.values()].every((count) => count === 1)).toBe(true);
  // Per partition key (one partition each), the work ran in the order the events were produced.
  for (const ns of order.values()) expect(ns).toEqual([...ns].sort((a, b) => a - b));
  const appended = hub.partitions.reduce((sum, p) => sum + p.length, 0);
  console.log(`makeIdempotentBatch on the local Event Hubs: ${appended} events appended, 150 distinct, each run once, in order per key`);
}, 180_000);
