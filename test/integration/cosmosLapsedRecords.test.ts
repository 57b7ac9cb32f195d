import { CosmosIdempotencyStore, keyFromMessageId, payloadDigest, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { cosmosLapsedInProgressRecords } from '../../src/lifecycle/cosmosLapsedRecords';
import { CosmosEmulator } from '../support/cosmos';
import { FakeClock } from '../support/tables';
import { CosmosClient, type Container, type PluginConfig } from '@azure/cosmos';
import { cosmosClientWithFaults } from '../support/cosmosFaults';

/**
 * The reconciler's read of the Cosmos store (`IDEMPOTENCY_STORE=cosmos`) on the in-process emulator: the payments
 * records still in progress whose lease lapsed before a bound, across logical partitions (one per key), page by page,
 * and nothing else (completed, released, leased, another consumer's). The Table store's read: lapsedRecords.test.ts.
 */
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => cosmos?.stop());

test('cosmosLapsedInProgressRecords: only one consumer in-progress records whose lease lapsed at or before the bound, over pages', async () => {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock(1_000_000);
  const store = new CosmosIdempotencyStore(container, { retentionMs: 86_400_000, leaseMs: 60_000, clock });
  const claim = async (consumer: string, id: string) => {
    const outcome = await store.claim(keyFromMessageId(consumer, id), payloadDigest({ id }));
    if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
    return outcome.claim;
  };
  const stuck = ['pay-1', 'pay-2', 'pay-3', 'pay-4', 'pay-5', 'pay-6'];
  for (const id of stuck) await claim('payments', id);
  await claim('orders', 'ord-1'); // another consumer's
  await store.complete(await claim('payments', 'pay-done'), { status: 'succeeded' }, [{ name: 'payment', properties: { state: 'charged' } }]);
  await store.release(await claim('payments', 'pay-released'), 'crashed');
  clock.advance(10 * 60_000);
  await claim('payments', 'pay-fresh'); // its lease runs until 11 min + 60 s
  const bound = clock.now - 5 * 60_000; // leases that lapsed 5 min ago or more
  const found: string[] = [];
  for await (const record of cosmosLapsedInProgressRecords(container, { consumer: 'payments', lapsedBeforeMs: bound, pageSize: 4 })) {
    expect(record).toMatchObject({ consumer: 'payments', status: 'IN_PROGRESS', attempt: 1 });
    expect(record.leaseExpiresAtMs).toBeLessThanOrEqual(bound);
    expect(record.etag).not.toBe('');
    found.push(record.key);
  }
  expect(found.sort()).toEqual(stuck);
  // Before the leases lapsed: none.
  const none: string[] = [];
  for await (const record of cosmosLapsedInProgressRecords(container, { consumer: 'payments', lapsedBeforeMs: 1_000_000 })) none.push(record.key);
  expect(none).toEqual([]);
});

/**
 * The reconciler's read of the Cosmos store on the in-process emulator (@vercel/cosmosdb-server): the lease bound
 * included, the default page size, and a store fault as the store's error. The emulator answers the query as the
 * service does for these (a parameterised SELECT over one container); what it cannot show is the service's own paging
 * across physical partitions, which the code leaves to the SDK.
 */
describe('the reconciler read of Cosmos: the lease bound, paging and a store fault (emulator)', () => {
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
});
