import { CosmosClient, type Container, type PluginConfig } from '@azure/cosmos';
import {
  CosmosIdempotencyStore,
  keyFromMessageId,
  payloadDigest,
  StoreRequestError,
  StoreUnavailableError,
  TTL_MARGIN_SECONDS,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';
import { holdCosmosRecords } from '../../src/lifecycle/cosmosHeldRecords';
import { CosmosEmulator } from '../support/cosmos';
import { FakeClock } from '../support/tables';

/**
 * The expiry timer's hold pass on the Cosmos store, on the in-process emulator (@vercel/cosmosdb-server, which does not
 * delete by TTL: the values written are checked, which the service counts from each write): the hold window's bound,
 * whole milliseconds, a record gone between the read and the write, a write refused before it was sent, the failure an
 * operator reads, and keys from several sources.
 */
const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const HOLD_MS = 20 * DAY_MS;

let cosmos: CosmosEmulator;
const clients: CosmosClient[] = [];
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  for (const client of clients) client.dispose();
  await cosmos?.stop();
});

const keyOf = (i: number): IdempotencyKey => keyFromMessageId('payments', `pay-${i}`);
const source = (name: string, keys: IdempotencyKey[]): HeldKeysSource => ({ name, heldKeys: async () => keys });

/** The same container through a client whose every request passes `hook` first (`send` sends it). */
function hooked(container: Container, hook: (request: { method: string; send: () => Promise<unknown> }) => Promise<unknown>): Container {
  const plugin = (async (context: { method?: string }, _node: unknown, next: (c: unknown) => Promise<unknown>) =>
    hook({ method: context.method ?? '?', send: () => next(context) })) as unknown as PluginConfig['plugin'];
  const client = new CosmosClient({
    endpoint: cosmos.endpoint,
    // The emulator accepts any key; this one is a placeholder, never a real credential.
    key: Buffer.from('emulator').toString('base64'),
    connectionPolicy: {
      enableEndpointDiscovery: false,
      retryOptions: { maxRetryAttemptCount: 0, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 1 },
    },
    plugins: [{ on: 'request', plugin }],
  } as ConstructorParameters<typeof CosmosClient>[0]);
  clients.push(client);
  return client.database(container.database.id).container(container.id);
}

/** pay-1 and pay-2 completed on a fresh container, the clock at their write. */
async function setUp() {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock();
  const store = new CosmosIdempotencyStore(container, { retentionMs: RETENTION_MS, leaseMs: 60_000, clock });
  for (const i of [1, 2]) {
    const outcome = await store.claim(keyOf(i), payloadDigest({ i }));
    if (outcome.kind !== 'claimed') throw new Error(`setup: ${outcome.kind}`);
    await store.complete(outcome.claim, { status: 'succeeded' });
  }
  const writtenAt = clock.now;
  const requests: string[] = [];
  const hold = (sources: HeldKeysSource[], on: Container = container, holdMs = HOLD_MS) =>
    holdCosmosRecords(on, sources, { holdMs, clock, callTimeoutMs: 2_000, onRequestCharge: (c) => requests.push(`${c.request} ${c.statusCode}`) });
  const doc = async (i: number) => {
    const id = store.recordIdOf(keyOf(i));
    return (await container.item(id, id).read<Record<string, unknown>>()).resource;
  };
  return { container, clock, store, writtenAt, requests, hold, doc };
}

describe('holdCosmosRecords on the emulator', () => {
  test('the write carries the stored document without the service properties (_etag, _ts, _rid, _self, _attachments): the store names none with _', async () => {
    const { container, clock, writtenAt, hold, doc } = await setUp();
    clock.now = writtenAt + RETENTION_MS - DAY_MS;
    const stored = await doc(1);
    expect(Object.keys(stored ?? {}).filter((name) => name.startsWith('_')).length).toBeGreaterThan(0);
    const bodies: unknown[] = [];
    const plugin = (async (context: { method?: string; body?: unknown }, _node: unknown, next: (c: unknown) => Promise<unknown>) => {
      if (context.method === 'PUT' || context.method === 'POST') bodies.push(typeof context.body === 'string' ? JSON.parse(context.body) : context.body);
      return next(context);
    }) as unknown as PluginConfig['plugin'];
    const client = new CosmosClient({
      endpoint: cosmos.endpoint,
      key: Buffer.from('emulator').toString('base64'),
      connectionPolicy: {
        enableEndpointDiscovery: false,
        retryOptions: { maxRetryAttemptCount: 0, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 1 },
      },
      plugins: [{ on: 'request', plugin }],
    } as ConstructorParameters<typeof CosmosClient>[0]);
    clients.push(client);
    const watched = client.database(container.database.id).container(container.id);
    expect((await hold([source('dlq', [keyOf(1)])], watched)).extended).toBe(1);
    const written = JSON.stringify(bodies);
    expect(bodies.length).toBeGreaterThan(0);
    expect(written).toContain(`"retentionExpiresAtMs":${clock.now + 2 * HOLD_MS}`);
    for (const name of ['_etag', '_ts', '_rid', '_self', '_attachments']) expect(written).not.toContain(`"${name}"`);
  });

  test('a record with exactly the hold window left is not written; one ms less and it is moved to now + 2 x the window', async () => {
    const { clock, writtenAt, requests, hold, doc } = await setUp();
    clock.now = writtenAt + RETENTION_MS - HOLD_MS;
    expect(await hold([source('dlq', [keyOf(1)])])).toEqual({ held: 1, heldWithRecord: 1, extended: 0, requests: 1 });
    expect(requests).toEqual(['read 200']);
    expect(await doc(1)).toMatchObject({ retentionExpiresAtMs: writtenAt + RETENTION_MS });
    clock.advance(1);
    expect(await hold([source('dlq', [keyOf(1)])])).toEqual({ held: 1, heldWithRecord: 1, extended: 1, requests: 2 });
    expect(await doc(1)).toMatchObject({ retentionExpiresAtMs: clock.now + 2 * HOLD_MS, ttl: (2 * HOLD_MS) / 1000 + TTL_MARGIN_SECONDS });
  });

  test('a hold window of a fraction of a millisecond: the new retention is still whole milliseconds', async () => {
    const { clock, writtenAt, hold, doc } = await setUp();
    clock.now = writtenAt + RETENTION_MS - DAY_MS;
    expect((await hold([source('dlq', [keyOf(1)])], undefined, HOLD_MS + 0.25)).extended).toBe(1);
    const written = await doc(1);
    expect(written?.retentionExpiresAtMs).toBe(clock.now + 2 * HOLD_MS);
  });

  test('keys from several sources are held once each; a record expired by its TTL between the read and the write is left, not retried', async () => {
    const { container, clock, writtenAt, requests, hold, doc } = await setUp();
    clock.now = writtenAt + RETENTION_MS - DAY_MS;
    let gone = false;
    const expiring = hooked(container, async ({ method, send }) => {
      if (method === 'PUT' && !gone) {
        gone = true;
        const current = await doc(2);
        await container.item(String(current!.id), String(current!.id)).delete(); // the service's TTL deleted it meanwhile
      }
      return send();
    });
    const counts = await hold([source('payments dlq', [keyOf(2), keyOf(1)]), source('orders dlq', [keyOf(1), keyOf(3)])], expiring);
    // pay-2: read, replace 404 (no second read); pay-1: read, replace; pay-3: read 404.
    expect(counts).toEqual({ held: 3, heldWithRecord: 2, extended: 1, requests: 5 });
    expect(requests).toEqual(['read 200', 'replace 404', 'read 200', 'replace 200', 'read 404']);
    expect(await doc(2).catch(() => undefined)).toBeUndefined();
  });

  test('a write refused before it was sent fails the run at once (StoreUnavailableError), without a re-read or a retry', async () => {
    const { container, clock, writtenAt, requests, hold } = await setUp();
    clock.now = writtenAt + RETENTION_MS - DAY_MS;
    const refusing = hooked(container, async ({ method, send }) => {
      if (method === 'PUT') throw Object.assign(new Error('connect ECONNREFUSED (refused before it was sent)'), { code: 'ECONNREFUSED' });
      return send();
    });
    const run = hold([source('dlq', [keyOf(1)])], refusing);
    await expect(run).rejects.toThrow(StoreUnavailableError);
    await expect(run).rejects.toMatchObject({ writeMayHaveLanded: false });
    expect(requests.filter((r) => r.startsWith('read'))).toEqual(['read 200']);
  });

  test('a record that keeps changing: the operator reads which record, why and how many tries', async () => {
    const { container, clock, writtenAt, store, hold, doc } = await setUp();
    clock.now = writtenAt + RETENTION_MS - DAY_MS;
    let writes = 0;
    const busy = hooked(container, async ({ method, send }) => {
      if (method === 'PUT') {
        writes++;
        const current = await doc(1);
        await container.item(String(current!.id), String(current!.id)).replace({ ...current, lastError: `write ${writes}` });
      }
      return send();
    });
    const run = hold([source('dlq', [keyOf(1)])], busy);
    await expect(run).rejects.toThrow(
      new StoreRequestError(
        `expiry timer: the held Cosmos record ${store.recordIdOf(keyOf(1))} kept changing (or its writes went unanswered); 5 tries to extend its retention failed`,
        'expiryTimer.cosmosHold.extend',
        412,
      ),
    );
    await expect(run).rejects.toMatchObject({ operation: 'expiryTimer.cosmosHold.extend', statusCode: 412 });
    expect(writes).toBe(5);
  });
});
