import type { TableClient } from '@azure/data-tables';
import { rewardsFromSettings, rewardsHandler } from '../../src/app/rewards';
import { registerRewardsFunction, REWARDS_FUNCTION } from '../../src/app/rewardsFunction';
import { createTableClient } from '../../src/app/tableClient';
import { loadSettings } from '../../src/config/settings';
import { pointsFor } from '../../src/rewards/rewardEvent';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { AzuriteBlob } from '../../tools/azurite/AzuriteBlob';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { BlobCheckpointStore } from '../../tools/local/eventHubs/BlobCheckpointStore';
import { LocalEventHub } from '../../tools/local/eventHubs/LocalEventHub';
import { LocalEventHubsHost, type BatchHandler } from '../../tools/local/eventHubs/LocalEventHubsHost';
import { rpcBatchRequest, workerBatchHandler } from '../../tools/local/eventHubs/workerBatch';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { localHubSink } from '../../tools/producer/eventSinks';
import { sendRewards } from '../../tools/producer/sendRewards';
import { useAzurite } from '../support/azurite';
import { tableLimitViolations, withTableLimits } from '../support/tableLimits';
import { freshTable } from '../support/tables';

/**
 * The rewards consumer as the app registers it (`registerRewardsFunction`, the function `functions/rewards.ts`
 * registers, built from settings by `rewardsFromSettings`), invoked as the Node worker invokes it: the batch as
 * the host sends it (a typed collection of the events' texts or bytes, PascalCase trigger metadata), turned
 * into the handler's arguments by `@azure/functions` itself. Behind it the local Event Hubs (checkpoints and
 * ownership on Azurite blobs), hosts that crash and are replaced (partitions move, batches replay from the
 * checkpoint), and an independent producer that retries sends.
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

/** The app's settings for a test: Azurite's tables, fresh table names. */
async function appSettings() {
  const rewards = await freshTable(azuriteOf(), 'rw');
  const parked = await freshTable(azuriteOf(), 'pk');
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    REWARDS_TABLE_NAME: rewards.tableName,
    PARKED_TABLE_NAME: parked.tableName,
  });
  return { settings, rewards, parked };
}

/** A worker that loaded the app's rewards registration (as `functions/rewards.ts` registers it). */
function loadWorker(settings: ReturnType<typeof loadSettings>): WorkerHost {
  // The app's own table clients, each write checked against Azure's Table limits.
  const tableClient = (name: string) => withTableLimits(createTableClient(settings, {}, name));
  return WorkerHost.load(() => registerRewardsFunction(rewardsHandler(rewardsFromSettings(settings, { tableClient }))));
}

async function balances(table: TableClient): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  for await (const row of table.listEntities<{ customerId?: string; points?: number | { value: string } }>({ queryOptions: { filter: "RowKey eq 'balance'" } }))
    found.set(String(row.customerId), Number(typeof row.points === 'object' ? row.points?.value : row.points));
  return found;
}

test('registration: an Event Hubs trigger with cardinality many, the hub, consumer group and connection from settings, retried forever', async () => {
  const { settings } = await appSettings();
  const worker = loadWorker(settings);
  const metadata = worker.registrations.get(REWARDS_FUNCTION)!.metadata;
  const trigger = Object.values(metadata.bindings).find((b) => b.type === 'eventHubTrigger');
  expect(trigger).toMatchObject({
    direction: 'in',
    cardinality: 'many',
    eventHubName: '%REWARDS_EVENT_HUB_NAME%',
    consumerGroup: '%REWARDS_CONSUMER_GROUP%',
    connection: 'EventHubConnection',
  });
  // Without a retry policy the host checkpoints past a batch that threw: its events would be lost.
  expect(metadata.retryOptions).toMatchObject({ maxRetryCount: -1 });
});

test('one batch as strings and as bytes, structured and binary-mode CloudEvents: applied once; the same batch again is a replay', async () => {
  const { settings, rewards } = await appSettings();
  const worker = loadWorker(settings);
  const binding = worker.bindingName(REWARDS_FUNCTION, 'eventHubTrigger');
  const structured = {
    specversion: '1.0',
    type: 'PaymentSucceeded',
    source: '/payments',
    id: 'p-1',
    data: { paymentId: 'p-1', customerId: 'c-1', amount: 1999, currency: 'EUR' },
  };
  const binaryData = { paymentId: 'p-2', customerId: 'c-1', amount: 500, currency: 'EUR' };
  const metadata = {
    partitionContext: { fullyQualifiedNamespace: 'local', eventHubName: 'payments', consumerGroup: 'rewards', partitionId: '3' },
    sequenceNumberArray: [7, 8],
    offsetArray: ['7168', '8192'],
    enqueuedTimeUtcArray: [new Date().toISOString(), new Date().toISOString()],
    propertiesArray: [
      {},
      { 'cloudEvents:specversion': '1.0', 'cloudEvents:type': 'PaymentSucceeded', 'cloudEvents:source': '/payments', 'cloudEvents:id': 'p-2' },
    ],
  };
  const first = (await worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, [structured, binaryData], metadata, 'binary'))) as Record<string, number>;
  expect(first).toMatchObject({ applied: 2, duplicates: 0, replays: 0, parked: 0 });
  // The host replays the batch from its checkpoint (as strings this time: the data type does not change the key).
  const again = (await worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, [structured, binaryData], metadata, 'string'))) as Record<string, number>;
  expect(again).toMatchObject({ applied: 0, duplicates: 2, replays: 2 });
  // A producer's resend of p-1 at another place: a duplicate, not a replay.
  const resent = (await worker.invoke(REWARDS_FUNCTION, rpcBatchRequest(binding, [structured], { ...metadata, sequenceNumberArray: [9] }))) as Record<
    string,
    number
  >;
  expect(resent).toMatchObject({ applied: 0, duplicates: 1, replays: 0 });
  expect(await balances(rewards)).toEqual(new Map([['c-1', pointsFor(1999) + pointsFor(500)]]));
});

test('the registered function on the local Event Hubs: producer retries, crashes after the function returned, partition moves; every balance = its distinct events', async () => {
  const seed = Number(process.env.EH_SEED ?? 424242);
  const { settings, rewards } = await appSettings();
  const hub = new LocalEventHub(`rewards${seed}`, 4);
  const checkpoints = new BlobCheckpointStore(blobs.connectionString, hub.namespace, hub.name, 'rewards');
  await checkpoints.ensureContainer();

  // Hosts: each loads the app as a fresh worker; every 7th batch its host "crashes" after the function returned
  // and before the checkpoint (the batch replays on the next owner), and the host is replaced.
  let hosts: LocalEventHubsHost[] = [];
  const ownersByPartition = new Map<string, Set<string>>();
  const counts = { batches: 0, applied: 0, duplicates: 0, replays: 0, crashes: 0 };
  const newHost = (): LocalEventHubsHost => {
    const invoke = workerBatchHandler(loadWorker(settings), REWARDS_FUNCTION);
    const handler: BatchHandler = async (bodies, context) => {
      const report = (await invoke(bodies, context)) as { applied: number; duplicates: number; replays: number };
      counts.applied += report.applied;
      counts.duplicates += report.duplicates;
      counts.replays += report.replays;
      const partitionId = (context.triggerMetadata.partitionContext as { partitionId: string }).partitionId;
      (ownersByPartition.get(partitionId) ?? ownersByPartition.set(partitionId, new Set()).get(partitionId)!).add(host.ownerId);
      if (++counts.batches % 7 === 0) {
        counts.crashes++;
        void host.crash(); // stops before the checkpoint; the replacement (below) takes the partition over after expiry
        hosts[hosts.indexOf(host)] = newHost();
      }
      return report;
    };
    const host: LocalEventHubsHost = new LocalEventHubsHost(hub, checkpoints, handler, () => hosts.length, { ownershipExpiryMs: 300, maxBatchSize: 6 });
    return host.start();
  };
  hosts = [newHost(), newHost()];

  // The producer: its own PRNG, 150 payments of 8 customers (partition key = customer), 20 % sent twice.
  const random = mulberry32(seed);
  const produced = new Map<string, { customerId: string; points: number }>();
  let retries = 0;
  for (let i = 0; i < 150; i++) {
    const customerId = `cust-${Math.floor(random() * 8)}`;
    const amount = 100 + Math.floor(random() * 50_000);
    const id = `pay-${seed}-${i}`;
    const event = { specversion: '1.0', type: 'PaymentSucceeded', source: '/payments', id, data: { paymentId: id, customerId, amount, currency: 'EUR' } };
    hub.send(event, { partitionKey: customerId });
    produced.set(id, { customerId, points: pointsFor(amount) });
    if (random() < 0.2) {
      hub.send(event, { partitionKey: customerId }); // the ack was lost: a second append, new sequence number
      retries++;
    }
    if (i % 10 === 0) await sleep(10);
  }

  const deadline = Date.now() + 150_000;
  while (!(await checkpoints.caughtUpWith(hub))) {
    if (Date.now() > deadline) throw new Error('the hosts did not reach the end of the hub in 150 s');
    await sleep(100);
  }
  await Promise.all(hosts.map((h) => h.crash()));

  const expected = new Map<string, number>();
  for (const { customerId, points } of produced.values()) expected.set(customerId, (expected.get(customerId) ?? 0) + points);
  expect(await balances(rewards)).toEqual(expected);
  const ledger = new RewardsLedger(rewards);
  for (const [customerId, points] of expected) expect(await ledger.balanceOf(customerId)).toBe(points);

  const moved = [...ownersByPartition.values()].filter((owners) => owners.size > 1).length;
  console.log(
    `rewardsConsumer on the local Event Hubs (seed ${seed}): ${produced.size} payments + ${retries} producer retries, ${counts.batches} batches, ` +
      `${counts.crashes} crashes before a checkpoint, ${moved} of 4 partitions moved; applied ${counts.applied}, duplicates ${counts.duplicates} (${counts.replays} replays)`,
  );
  expect(counts.applied).toBe(produced.size);
  expect(counts.crashes).toBeGreaterThan(0);
  expect(counts.replays).toBeGreaterThan(0); // each crash left a returned batch unchecked: its next owner read it again
  expect(counts.duplicates - counts.replays).toBeGreaterThanOrEqual(retries); // every producer retry was skipped as a resend
  expect(moved).toBeGreaterThan(0);
}, 240_000);

test('the producer CLI (npm run send -- --kind rewards) to the local hub, binary mode with retries: the app ends at the balances it prints', async () => {
  const { settings, rewards } = await appSettings();
  const hub = new LocalEventHub('cli', 2);
  const checkpoints = new BlobCheckpointStore(blobs.connectionString, hub.namespace, hub.name, 'rewards');
  await checkpoints.ensureContainer();
  const lines: string[] = [];
  const argv = ['--kind', 'rewards', '--count', '40', '--customers', '4', '--retries', '1', '--retry-share', '0.5', '--mode', 'binary', '--seed', '9'];
  expect(
    await sendRewards(
      argv,
      {},
      'cli1',
      (line) => lines.push(line),
      () => localHubSink(hub),
    ),
  ).toBe(0);
  const appended = hub.partitions.reduce((n, p) => n + p.length, 0);
  expect(lines).toContain(`sent ${appended} events (${appended - 40} producer retries) to local hub cli (2 partitions), run cli1`);
  expect(appended).toBeGreaterThan(40);

  let hosts: LocalEventHubsHost[] = [];
  const host = () =>
    new LocalEventHubsHost(hub, checkpoints, workerBatchHandler(loadWorker(settings), REWARDS_FUNCTION, 'binary'), () => hosts.length, {
      maxBatchSize: 5,
    }).start();
  hosts = [host()];
  const deadline = Date.now() + 60_000;
  while (!(await Promise.all(hub.partitionIds.map(async (p) => (await checkpoints.checkpointOf(p)) === hub.partitions[Number(p)].length - 1))).every(Boolean)) {
    if (Date.now() > deadline) throw new Error('not consumed in 60 s');
    await sleep(50);
  }
  await Promise.all(hosts.map((h) => h.crash()));
  const printed = new Map<string, number>();
  for (const match of lines.map((l) => /^expected balance (\S+): (\d+) points$/.exec(l))) if (match) printed.set(match[1], Number(match[2]));
  expect(printed.size).toBe(4);
  expect(await balances(rewards)).toEqual(printed);
}, 120_000);

afterAll(() => {
  expect(tableLimitViolations).toEqual([]);
});
