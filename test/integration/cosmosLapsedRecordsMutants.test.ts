import { CosmosClient, type Container, type PluginConfig } from '@azure/cosmos';
import { CosmosIdempotencyStore, keyFromMessageId, payloadDigest, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { cosmosLapsedInProgressRecords } from '../../src/lifecycle/cosmosLapsedRecords';
import { CosmosEmulator } from '../support/cosmos';
import { cosmosClientWithFaults } from '../support/cosmosFaults';
import { FakeClock } from '../support/tables';

/**
 * The reconciler's read of the Cosmos store on the in-process emulator (@vercel/cosmosdb-server): the lease bound
 * included, the default page size, and a store fault as the store's error. The emulator answers the query as the
 * service does for these (a parameterised SELECT over one container); what it cannot show is the service's own paging
 * across physical partitions, which the code leaves to the SDK.
 */
let cosmos: CosmosEmulator;
const clients: CosmosClient[] = [];
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  for (const client of clients) client.dispose();
  await cosmos?.stop();
});

/** The same container through a client that counts the query pages it asks for. */
function countingQueries(container: Container): { container: Container; pages: () => number } {
  let pages = 0;
  const plugin = (async (context: { operationType?: string }, _node: unknown, next: (c: unknown) => Promise<unknown>) => {
    if (context.operationType === 'query') pages++;
    return next(context);
  }) as unknown as PluginConfig['plugin'];
  const client = new CosmosClient({
    endpoint: cosmos.endpoint,
    // The emulator accepts any key; this one is a placeholder, never a real credential.
    key: Buffer.from('emulator').toString('base64'),
    connectionPolicy: { enableEndpointDiscovery: false },
    plugins: [{ on: 'request', plugin }],
  } as ConstructorParameters<typeof CosmosClient>[0]);
  clients.push(client);
  return { container: client.database(container.database.id).container(container.id), pages: () => pages };
}

async function stuckRecords(count: number) {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock(1_000_000);
  const store = new CosmosIdempotencyStore(container, { retentionMs: 86_400_000, leaseMs: 60_000, clock });
  for (let i = 0; i < count; i++) {
    const outcome = await store.claim(keyFromMessageId('payments', `pay-${i}`), payloadDigest({ i }));
    if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  }
  return { container, leaseEndMs: clock.now + 60_000 };
}

async function keysOf(container: Container, lapsedBeforeMs: number, pageSize?: number): Promise<string[]> {
  const keys: string[] = [];
  for await (const record of cosmosLapsedInProgressRecords(container, { consumer: 'payments', lapsedBeforeMs, pageSize })) keys.push(record.key);
  return keys.sort();
}

test('a lease that ends at the bound has lapsed; one ms before it, not yet', async () => {
  const { container, leaseEndMs } = await stuckRecords(1);
  expect(await keysOf(container, leaseEndMs)).toEqual(['pay-0']);
  expect(await keysOf(container, leaseEndMs + 0.5)).toEqual(['pay-0']);
  expect(await keysOf(container, leaseEndMs - 1)).toEqual([]);
});

test('pages of 100 by default: 101 lapsed records come in two query pages, each read only when the caller asks', async () => {
  const { container, leaseEndMs } = await stuckRecords(101);
  const counted = countingQueries(container);
  expect(await keysOf(counted.container, leaseEndMs)).toHaveLength(101);
  expect(counted.pages()).toBe(2);
  const again = countingQueries(container);
  const records = cosmosLapsedInProgressRecords(again.container, { consumer: 'payments', lapsedBeforeMs: leaseEndMs });
  expect((await records.next()).done).toBe(false);
  expect(again.pages()).toBe(1); // the caller stops here (its budget): the second page is never asked for
  await records.return(undefined);
});

test('a store that cannot be reached is the store error of reconcile.query (nothing was decided)', async () => {
  const { container, leaseEndMs } = await stuckRecords(1);
  const { client, faults } = cosmosClientWithFaults(cosmos.endpoint);
  clients.push(client);
  faults.mode = 'refuse';
  const refusing = client.database(container.database.id).container(container.id);
  const read = keysOf(refusing, leaseEndMs);
  await expect(read).rejects.toThrow(StoreUnavailableError);
  await expect(read).rejects.toMatchObject({
    operation: 'reconcile.query',
    message: expect.stringMatching(/^cosmos store unavailable during reconcile\.query/),
  });
});
