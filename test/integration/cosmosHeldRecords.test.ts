import { CosmosClient, type Container, type PluginConfig } from '@azure/cosmos';
import { InvocationContext } from '@azure/functions';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { loadSettings } from '../../src/config/settings';
import {
  CosmosIdempotencyStore,
  keyFromMessageId,
  payloadDigest,
  StoreRequestError,
  TableIdempotencyStore,
  type IdempotencyKey,
  StoreUnavailableError,
  TTL_MARGIN_SECONDS,
} from 'azure-functions-idempotency/internal';
import { holdCosmosRecords } from '../../src/lifecycle/cosmosHeldRecords';
import type { HeldKeysSource } from 'azure-functions-idempotency/table';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';
import { cosmosClientWithFaults } from '../support/cosmosFaults';
import { FakeClock, freshTable } from '../support/tables';

/**
 * Issue 23, item 6 on the Cosmos store (`IDEMPOTENCY_STORE=cosmos`): the expiry timer holds the records of
 * dead-lettered payments by moving their retention and their documents' `ttl` forward. On the in-process emulator
 * (@vercel/cosmosdb-server), which does not delete by TTL: the tests check the values written, which the service
 * counts from each document's last write (docs/stores.md).
 */
const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const HOLD_MS = 20 * DAY_MS;
const HELD_TTL = (2 * HOLD_MS) / 1000 + TTL_MARGIN_SECONDS;

const keyOf = (i: number): IdempotencyKey => keyFromMessageId('payments', `pay-${i}`);
const digestOf = (i: number): string => payloadDigest({ paymentId: `pay-${i}`, amount: 100 + i });

const azuriteOf = useAzurite();
let cosmos: CosmosEmulator;
const clients: CosmosClient[] = [];
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  for (const client of clients) client.dispose();
  await cosmos?.stop();
});

/** A dead-letter queue as the hold sees it: the keys of the messages in it, changed by the test. */
class DeadLetterList implements HeldKeysSource {
  readonly name = 'payments dead-letter queue';
  keys: IdempotencyKey[] = [];
  failWith: Error | undefined;
  async heldKeys(): Promise<readonly IdempotencyKey[]> {
    if (this.failWith) throw this.failWith;
    return this.keys;
  }
}

/**
 * The same container through a client whose every request passes `hook` first (`send` sends it): another writer
 * between the hold's read and its write, or an answer lost on the way back.
 */
function hooked(container: Container, hook: (request: { method: string; send: () => Promise<unknown> }) => Promise<unknown>): Container {
  const plugin = (async (context: { method?: string }, _node: unknown, next: (c: unknown) => Promise<unknown>) =>
    hook({ method: context.method ?? '?', send: () => next(context) })) as unknown as PluginConfig['plugin'];
  const client = new CosmosClient({
    endpoint: cosmos.endpoint,
    // The emulator accepts any key; this one is a placeholder, never a real credential.
    key: Buffer.from('emulator').toString('base64'),
    connectionPolicy: {
      enableEndpointDiscovery: false,
      requestTimeout: 5_000,
      retryOptions: { maxRetryAttemptCount: 3, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 2 },
    },
    plugins: [{ on: 'request', plugin }],
  } as ConstructorParameters<typeof CosmosClient>[0]);
  clients.push(client);
  return client.database(container.database.id).container(container.id);
}

/**
 * The records of pay-1 to pay-3 on a fresh container, and the hold on it. With `deadLettered`: that payment's key is in
 * the dead-letter queue and the clock is one day before the records' end (within the hold window).
 */
async function setUp(deadLettered?: number) {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock();
  const store = new CosmosIdempotencyStore(container, { retentionMs: RETENTION_MS, leaseMs: 60_000, clock });
  // pay-1 charged with its Payment row, pay-2 charged, pay-3 claimed and never completed (its delivery crashed after the charge).
  for (const i of [1, 2]) {
    const outcome = await store.claim(keyOf(i), digestOf(i));
    if (outcome.kind !== 'claimed') throw new Error(`setup: ${outcome.kind}`);
    const effects = i === 1 ? [{ name: 'payment', properties: { amount: 101, state: 'charged' } }] : undefined;
    await store.complete(outcome.claim, { status: 'succeeded', chargeId: `ch_${i}` }, effects);
  }
  if ((await store.claim(keyOf(3), digestOf(3))).kind !== 'claimed') throw new Error('setup: pay-3 not claimed');
  const dlq = new DeadLetterList();
  if (deadLettered !== undefined) {
    dlq.keys = [keyOf(deadLettered)];
    clock.advance(RETENTION_MS - DAY_MS);
  }
  const requests: string[] = [];
  const hold = (on: Container = container, callTimeoutMs = 2_000) =>
    holdCosmosRecords(on, [dlq], { holdMs: HOLD_MS, clock, callTimeoutMs, onRequestCharge: (c) => requests.push(`${c.request} ${c.statusCode}`) });
  const doc = async (i: number, row?: string): Promise<Record<string, unknown>> => {
    const id = store.recordIdOf(keyOf(i));
    return (await container.item(row ? `${id}~${row}` : id, id).read<Record<string, unknown>>()).resource!;
  };
  return { container, clock, store, dlq, requests, hold, doc };
}

describe('the expiry timer holds the Cosmos records of dead-lettered payments (emulator)', () => {
  test('a held record gets a later retention and ttl, its local row the same ttl; a key without record is missing; the others keep theirs', async () => {
    const { clock, store, dlq, requests, hold, doc } = await setUp();
    dlq.keys = [keyOf(1), keyOf(3), keyOf(4), keyOf(1)]; // pay-4 never claimed (no record); pay-1 listed twice counts once
    const before = { 1: await doc(1), 2: await doc(2), 3: await doc(3), row: await doc(1, 'payment') };
    clock.advance(RETENTION_MS - DAY_MS); // one day before the records' end: within the hold window

    expect(await hold()).toEqual({ held: 3, heldWithRecord: 2, extended: 2, requests: 6 });
    // pay-1: marker read, row read, batch (marker + row); pay-3: read, replace; pay-4: read (404).
    expect(requests).toEqual(['read 200', 'read 200', 'batch 200', 'read 200', 'replace 200', 'read 404']);
    for (const i of [1, 3] as const) {
      const now = await doc(i);
      expect(now.retentionExpiresAtMs).toBe(clock.now + 2 * HOLD_MS);
      expect(now.ttl).toBe(HELD_TTL);
      // Nothing else moved: status, lease, result, attempt, last write time.
      for (const name of ['status', 'leaseExpiresAtMs', 'resultJson', 'attempt', 'ownerId', 'updatedAtMs', 'createdAtMs', 'localRows', 'digest'])
        expect({ name, value: now[name] }).toEqual({ name, value: before[i][name] });
    }
    const row = await doc(1, 'payment');
    expect(row.ttl).toBe(HELD_TTL);
    expect(row.properties).toEqual(before.row.properties);
    expect(await doc(2)).toMatchObject({ retentionExpiresAtMs: before[2].retentionExpiresAtMs, ttl: RETENTION_MS / 1000 + TTL_MARGIN_SECONDS });

    // The operator resubmits pay-1 two weeks later, past its first retention: answered from its record.
    clock.advance(14 * DAY_MS);
    const again = await store.claim(keyOf(1), digestOf(1));
    expect(again.kind === 'duplicate' && again.record.result).toEqual({ status: 'succeeded', chargeId: 'ch_1' });
    // pay-2 was not held: past its retention it counts as absent (the service would have deleted it by now): taken over
    // as a new lifetime (a new generation), i.e. charged again by a provider that forgot the key.
    const afresh = await store.claim(keyOf(2), digestOf(2));
    expect(afresh.kind === 'reclaimed' && afresh.claim.createdAtMs).toBe(clock.now);
  });

  test('a held record is written once per hold window: the next run reads it and writes nothing', async () => {
    const { clock, requests, hold, doc } = await setUp(1);
    expect((await hold()).extended).toBe(1);
    const extended = await doc(1);
    clock.advance(DAY_MS);
    requests.length = 0;
    expect(await hold()).toEqual({ held: 1, heldWithRecord: 1, extended: 0, requests: 1 });
    expect((await doc(1))._etag).toBe(extended._etag);
    // HOLD_MS later it is within the window again and moves once more.
    clock.advance(HOLD_MS);
    expect((await hold()).extended).toBe(1);
    expect((await doc(1)).retentionExpiresAtMs).toBe(clock.now + 2 * HOLD_MS);
  });

  test('a write between the read and the replace (412): the hold reads again and retries; the other write is kept', async () => {
    const { container, clock, requests, hold, doc } = await setUp(2);
    let interfered = false;
    const racing = hooked(container, async ({ method, send }) => {
      if (method === 'PUT' && !interfered) {
        interfered = true;
        const current = await doc(2);
        await container.item(String(current.id), String(current.id)).replace({ ...current, lastError: 'written by someone else' });
      }
      return send();
    });
    expect(await hold(racing)).toEqual({ held: 1, heldWithRecord: 1, extended: 1, requests: 4 });
    expect(requests).toEqual(['read 200', 'replace 412', 'read 200', 'replace 200']);
    expect(await doc(2)).toMatchObject({ lastError: 'written by someone else', retentionExpiresAtMs: clock.now + 2 * HOLD_MS, ttl: HELD_TTL });
  });

  test('a resubmission that takes the record over between the read and the replace: read again, its new retention is enough, nothing written', async () => {
    const { container, clock, store, requests, hold, doc } = await setUp(3);
    let interfered = false;
    const racing = hooked(container, async ({ method, send }) => {
      if (method === 'PUT' && !interfered) {
        interfered = true;
        expect((await store.claim(keyOf(3), digestOf(3))).kind).toBe('reclaimed'); // the lease lapsed long ago
      }
      return send();
    });
    expect(await hold(racing)).toEqual({ held: 1, heldWithRecord: 1, extended: 0, requests: 3 });
    expect(requests).toEqual(['read 200', 'replace 412', 'read 200']);
    expect(await doc(3)).toMatchObject({ attempt: 2, status: 'IN_PROGRESS', retentionExpiresAtMs: clock.now + RETENTION_MS });
  });

  test('a replace whose answer is lost but which landed is re-read and counted once, not written again', async () => {
    const { container, clock, requests, hold, doc } = await setUp(2);
    let lost = false;
    const lossy = hooked(container, async ({ method, send }) => {
      if (method !== 'PUT' || lost) return send();
      lost = true;
      await send(); // it reaches the store and acts ...
      throw Object.assign(new Error('socket hang up (the answer was lost)'), { code: 'ECONNRESET' }); // ... its answer never comes back
    });
    expect(await hold(lossy)).toEqual({ held: 1, heldWithRecord: 1, extended: 1, requests: 3 });
    expect(requests).toEqual(['read 200', 'replace undefined', 'read 200']);
    expect(await doc(2)).toMatchObject({ retentionExpiresAtMs: clock.now + 2 * HOLD_MS, ttl: HELD_TTL });
  });

  test('a replace left unanswered (deadline) that did not land is re-read and written again; when it lands late it changes nothing (412)', async () => {
    const { container, clock, requests, hold, doc } = await setUp(2);
    const { client, faults } = cosmosClientWithFaults(cosmos.endpoint);
    clients.push(client);
    faults.mode = 'hang';
    const hanging = client.database(container.database.id).container(container.id);
    expect(await hold(hanging, 1_500)).toEqual({ held: 1, heldWithRecord: 1, extended: 1, requests: 4 });
    expect(requests).toEqual(['read 200', 'replace undefined', 'read 200', 'replace 200']);
    const extended = await doc(2);
    expect(extended).toMatchObject({ retentionExpiresAtMs: clock.now + 2 * HOLD_MS, ttl: HELD_TTL });
    expect(await faults.held!.land()).toBe(412);
    expect((await doc(2))._etag).toBe(extended._etag);
  });

  test('a record that keeps changing fails the run after 5 tries (StoreRequestError)', async () => {
    const { container, hold, doc } = await setUp(2);
    let writes = 0;
    const busy = hooked(container, async ({ method, send }) => {
      if (method === 'PUT') {
        writes++;
        const current = await doc(2);
        await container.item(String(current.id), String(current.id)).replace({ ...current, lastError: `write ${writes}` });
      }
      return send();
    });
    await expect(hold(busy)).rejects.toThrow(StoreRequestError);
    await expect(hold(busy)).rejects.toThrow(/kept changing .* 5 tries/);
  });

  test('a dead-letter queue that cannot be read fails the hold before anything is written', async () => {
    const { clock, dlq, requests, hold, doc } = await setUp();
    dlq.keys = [keyOf(1)];
    dlq.failWith = new Error('dead-letter queue unreachable');
    const before = await doc(1);
    clock.advance(RETENTION_MS - DAY_MS);
    await expect(hold()).rejects.toThrow('dead-letter queue unreachable');
    expect(requests).toEqual([]);
    expect((await doc(1))._etag).toBe(before._etag);
  });
});

describe('the expiry timer with IDEMPOTENCY_STORE=cosmos (emulator + Azurite)', () => {
  class CollectingReader extends MetricReader {
    protected override onForceFlush(): Promise<void> {
      return Promise.resolve();
    }
    protected override onShutdown(): Promise<void> {
      return Promise.resolve();
    }
  }
  const tick = { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } };

  /**
   * A tick's setup: {@link setUp}'s records on Cosmos, an HTTP API record (`http-payments`) in a fresh idempotency table
   * (it stays on Table Storage with IDEMPOTENCY_STORE=cosmos), the settings of that store, and an invocation context that
   * keeps each log line as `<level> <message>`; the clock one day before the records' end (within the hold window).
   */
  async function setUpTick(invocationId: string) {
    const records = await setUp();
    const table = await freshTable(azuriteOf());
    const httpStore = new TableIdempotencyStore(table, { retentionMs: DAY_MS, leaseMs: 60_000, clock: records.clock });
    await httpStore.commit({ consumer: 'http-payments', key: 'idem-1' }, digestOf(9), { accepted: true });
    records.clock.advance(RETENTION_MS - DAY_MS);
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      IDEMPOTENCY_TABLE_NAME: table.tableName,
      IDEMPOTENCY_STORE: 'cosmos',
      COSMOS_ENDPOINT: cosmos.endpoint,
    });
    const logs: string[] = [];
    const context = new InvocationContext({
      invocationId,
      functionName: 'expiryTimer',
      logHandler: (level, ...args) => logs.push(`${level} ${args.join(' ')}`),
    });
    return { ...records, httpStore, settings, logs, context };
  }

  test("each tick holds the dead-lettered payments' records on Cosmos, then sweeps the table (the HTTP API's records) without holds", async () => {
    const { container, clock, dlq, doc, httpStore, settings, logs, context } = await setUpTick('c1');
    let dlqReads = 0;
    const counted: HeldKeysSource = { name: dlq.name, heldKeys: () => (dlqReads++, dlq.heldKeys()) };
    dlq.keys = [keyOf(1), keyOf(4)];
    const reader = new CollectingReader();
    const provider = new MeterProvider({ readers: [reader] });
    const handler = expiryTimerFromSettings(settings, {
      clock,
      holds: [counted],
      idempotencyContainer: container,
      meter: provider.getMeter('idempotent-consumer'),
    });
    await handler(tick, context);

    // Default settings: the hold window is the redelivery window, 28 d 1 h; the record now lives 2 x that.
    const windowMs = 28 * DAY_MS + 3_600_000;
    expect(await doc(1)).toMatchObject({ retentionExpiresAtMs: clock.now + 2 * windowMs, ttl: (2 * windowMs) / 1000 + TTL_MARGIN_SECONDS });
    expect(logs.join('\n')).toMatch(/cosmos hold: held 2 \(1 with a record, 1 extended\), 4 requests/);
    // The table sweep ran, without a hold pass of its own (no "held" in its line; the dead-letter queue read once).
    expect(logs.join('\n')).toMatch(/expiry sweep: scanned 1, deleted 1, skipped 0/);
    expect(await httpStore.get({ consumer: 'http-payments', key: 'idem-1' })).toBeUndefined();
    expect(dlqReads).toBe(1);
    // The held counts in the metrics are the Cosmos hold's.
    const { resourceMetrics } = await reader.collect();
    const extended = resourceMetrics.scopeMetrics.flatMap((m) => m.metrics).find((m) => m.descriptor.name === 'idempotency.purge.held_extended');
    expect(extended?.dataPoints.reduce((sum, p) => sum + Number(p.value), 0)).toBe(1);
    await provider.shutdown();
  });

  test('a dead-letter queue that cannot be read fails the run: nothing held, nothing swept', async () => {
    const { container, clock, dlq, doc, httpStore, settings, logs, context } = await setUpTick('c2');
    dlq.keys = [keyOf(1)];
    dlq.failWith = new Error('dead-letter queue unreachable');
    const before = await doc(1);
    await expect(expiryTimerFromSettings(settings, { clock, holds: [dlq], idempotencyContainer: container })(tick, context)).rejects.toThrow(
      'dead-letter queue unreachable',
    );
    expect(logs.join('\n')).toMatch(/error expiry sweep failed: Error: dead-letter queue unreachable/);
    expect((await doc(1))._etag).toBe(before._etag);
    expect(await httpStore.get({ consumer: 'http-payments', key: 'idem-1' })).toBeDefined();
  });

  test('refuses to build the timer (at start) with a schedule whose runs are further apart than the DLQ resubmit margin', () => {
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
      IDEMPOTENCY_STORE: 'cosmos',
      COSMOS_ENDPOINT: 'http://127.0.0.1:9',
      EXPIRY_TIMER_SCHEDULE: '0 0 0 1,15 * *',
    });
    expect(() => expiryTimerFromSettings(settings)).toThrow(/EXPIRY_TIMER_SCHEDULE "0 0 0 1,15 \* \*" leaves up to 17.00 days between runs/);
    expect(() => expiryTimerFromSettings({ ...settings, EXPIRY_TIMER_SCHEDULE: '0 0 3 * * 0' })).not.toThrow();
  });
});

/**
 * The expiry timer's hold pass on the Cosmos store, on the in-process emulator (@vercel/cosmosdb-server, which does not
 * delete by TTL: the values written are checked, which the service counts from each write): the hold window's bound,
 * whole milliseconds, a record gone between the read and the write, a write refused before it was sent, the failure an
 * operator reads, and keys from several sources.
 */
describe('the Cosmos hold pass: the window bound, whole ms, races, refusals and several sources (emulator)', () => {
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
});
