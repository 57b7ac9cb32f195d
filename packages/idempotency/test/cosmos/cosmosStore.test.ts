import type { Container } from '@azure/cosmos';
import { CosmosIdempotencyStore, type CosmosRequestCharge } from 'azure-functions-idempotency/cosmos';
import {
  LeaseLostError,
  StoreRequestError,
  StoreUnavailableError,
  UnknownRecordStatusError,
  keyFromMessageId,
  payloadDigest,
  type ClaimOutcome,
} from 'azure-functions-idempotency';
import { COSMOS_PARTITION_KEY_PATH, TTL_MARGIN_SECONDS } from 'azure-functions-idempotency/internal';
import { CosmosEmulator, cosmosClientFor } from '../../../../test/support/cosmos';
import { localRowsInContainer } from '../../../../test/support/cosmosRows';
import { SilentServer } from '../../../../test/support/silentServer';
import { FakeClock } from '../../../../test/support/tables';

// What is specific to the Cosmos DB store, on the in-process emulator (@vercel/cosmosdb-server).
// The emulator's gaps, and what they mean here:
// - TTL is not enforced: these tests check the `ttl` each document is written with (the service deletes a
//   document `ttl` seconds after its last write); that the service really deletes it is not shown here.
// - A transactional batch is not atomic: the emulator applies the ops before a failing one. The store puts
//   the marker first and its only conditional op there, so a batch whose marker op fails writes nothing on
//   either; a batch failing on a later op would leave the marker on the emulator and nothing on the service.
// - Request charges are a flat 1 per request (header `x-ms-request-charge: 1`): the counts of requests
//   per operation are real, the RU figures are not the service's (a 1 KB point read is ~1 RU there, a
//   create ~5-6 RU, a replace ~10 RU, more for larger documents and batches).

const LEASE_MS = 60_000;
const RETENTION_MS = 3_600_000;
const digest = payloadDigest({ amount: 1 });
let n = 0;
const freshKey = () => keyFromMessageId('cosmos', `m-${++n}-${Date.now()}`);

let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

interface Rig {
  container: Container;
  clock: FakeClock;
  charges: CosmosRequestCharge[];
  store: CosmosIdempotencyStore;
}

async function rig(options: { leaseMs?: number; retentionMs?: number } = {}): Promise<Rig> {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock();
  const charges: CosmosRequestCharge[] = [];
  const store = new CosmosIdempotencyStore(container, {
    leaseMs: options.leaseMs ?? LEASE_MS,
    retentionMs: options.retentionMs ?? RETENTION_MS,
    clock,
    onRequestCharge: (charge) => charges.push(charge),
  });
  return { container, clock, charges, store };
}

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

async function readDoc(container: Container, id: string, partitionKey: string): Promise<Record<string, unknown> | undefined> {
  return (await container.item(id, partitionKey).read<Record<string, unknown>>()).resource;
}

describe('CosmosIdempotencyStore: partition key and layout', () => {
  test('the container is partitioned on /recordId with TTL on; marker and rows share the record id as partition key value', async () => {
    const { container, store } = await rig();
    const { resource } = await container.read();
    expect(resource?.partitionKey?.paths).toEqual([COSMOS_PARTITION_KEY_PATH]);
    expect(resource?.defaultTtl).toBe(-1);
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest, { effects: [{ name: 'payment', properties: { amount: 5, note: null } }] }));
    const recordId = store.recordIdOf(key);
    expect(claim.recordId).toBe(recordId);
    expect(await readDoc(container, recordId, recordId)).toMatchObject({ id: recordId, recordId, status: 'IN_PROGRESS', localRows: ['payment'] });
    // The row: same logical partition, its own properties nested (no user name can collide with id, ttl, _etag...).
    expect(await readDoc(container, `${recordId}~payment`, recordId)).toMatchObject({ recordId, kind: 'payment', properties: { amount: 5 } });
    expect(await localRowsInContainer(container, recordId)).toEqual(new Map([['payment', { amount: 5 }]]));
  });

  test('row properties named like Cosmos system properties are kept as data, never as the document id, ttl or etag', async () => {
    const { container, store } = await rig();
    const key = freshKey();
    await store.commit(key, digest, 'ok', [{ name: 'row', properties: { id: 'x', ttl: 1, recordId: 'elsewhere', _etag: 'e' } }]);
    const recordId = store.recordIdOf(key);
    const row = await readDoc(container, `${recordId}~row`, recordId);
    expect(row).toMatchObject({ id: `${recordId}~row`, recordId, properties: { id: 'x', ttl: 1, recordId: 'elsewhere', _etag: 'e' } });
    expect(row?.ttl).toBeGreaterThan(RETENTION_MS / 1000);
  });
});

describe('CosmosIdempotencyStore: the completed-key cache and its `cacheable` option', () => {
  test('a completed record `cacheable` rejects is never cached: a duplicate after another process reopened it reads the container, not the old result', async () => {
    const container = await cosmos.freshIdempotencyContainer();
    const clock = new FakeClock();
    let requests = 0;
    const store = new CosmosIdempotencyStore(container, {
      leaseMs: LEASE_MS,
      retentionMs: RETENTION_MS,
      clock,
      cacheSize: 10,
      cacheable: (record) => (record.result as { status?: string } | undefined)?.status !== 'failed',
      onRequestCharge: () => void requests++,
    });
    const key = freshKey();
    await store.complete(claimOf(await store.claim(key, digest)), { status: 'failed' });
    requests = 0;
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false, record: { result: { status: 'failed' } } });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false });
    expect(requests).toBeGreaterThanOrEqual(2);
    // Another process reopens it (COMPLETED -> RELEASED), as the payments operator's retry does on the table.
    const recordId = store.recordIdOf(key);
    const marker = (await container.item(recordId, recordId).read<Record<string, unknown>>()).resource!;
    await container.item(recordId, recordId).replace({ ...marker, status: 'RELEASED', leaseExpiresAtMs: 0 });
    const retried = claimOf(await store.claim(key, digest));
    expect(retried.attempt).toBe(2);
    await store.complete(retried, { status: 'succeeded' });
    // An accepted result is cached as usual: no request.
    requests = 0;
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: true, record: { result: { status: 'succeeded' } } });
    expect(requests).toBe(0);
  });
});

describe('CosmosIdempotencyStore: TTL instead of a sweep (values written; the emulator does not enforce TTL)', () => {
  test('a completed record and its rows expire retention + margin after the last write', async () => {
    const { container, store } = await rig();
    const key = freshKey();
    const recordId = store.recordIdOf(key);
    await store.commit(key, digest, 'ok', [{ name: 'row', properties: { v: 1 } }]);
    const marker = await readDoc(container, recordId, recordId);
    expect(marker?.ttl).toBe(RETENTION_MS / 1000 + TTL_MARGIN_SECONDS);
    expect((await readDoc(container, `${recordId}~row`, recordId))?.ttl).toBe(marker?.ttl);
  });

  test('an in-progress record never expires under a valid lease: a lease longer than the retention sets the ttl, and a renewal extends it', async () => {
    const { container, clock, store } = await rig({ leaseMs: 7_200_000, retentionMs: 60_000 });
    const key = freshKey();
    const recordId = store.recordIdOf(key);
    const claim = claimOf(await store.claim(key, digest, { effects: [{ name: 'row', properties: { v: 1 } }] }));
    expect((await readDoc(container, recordId, recordId))?.ttl).toBe(7_200 + TTL_MARGIN_SECONDS);
    clock.advance(3_600_000);
    const renewed = await store.renewLease(claim, 10_800_000);
    // The service counts ttl from the renewal's write: it now ends a margin after the new lease end.
    expect((await readDoc(container, recordId, recordId))?.ttl).toBe((renewed.leaseExpiresAtMs - clock.now) / 1000 + TTL_MARGIN_SECONDS);
    expect(renewed.leaseExpiresAtMs - clock.now).toBe(10_800_000);
    // The row the renewal did not write again is carried forward with the marker's TTL (read and written back in the batch).
    expect((await readDoc(container, `${recordId}~row`, recordId))?.ttl).toBe(10_800 + TTL_MARGIN_SECONDS);
    expect(await localRowsInContainer(container, recordId)).toEqual(new Map([['row', { v: 1 }]]));
  });
});

describe('CosmosIdempotencyStore: request charges and round trips per operation (from the response headers)', () => {
  test('fresh claim + complete = create + replace; duplicate = failed create + read; read-first duplicate = read; commit with a row = one batch', async () => {
    const { charges, store } = await rig();
    const key = freshKey();
    const take = () => charges.splice(0).map((c) => `${c.operation}:${c.request}:${c.statusCode}`);
    await store.complete(claimOf(await store.claim(key, digest)), 'ok');
    expect(take()).toEqual(['claim:create:201', 'complete:replace:200']);
    expect((await store.claim(key, digest)).kind).toBe('duplicate');
    expect(take()).toEqual(['claim:create:409', 'claim:read:200']);
    expect((await store.claim(key, digest, { readFirst: true })).kind).toBe('duplicate');
    expect(take()).toEqual(['claim:read:200']);
    await store.commit(freshKey(), digest, 'ok', [{ name: 'row', properties: { v: 1 } }]);
    expect(take()).toEqual(['claim:batch:200']);
  });

  test('every answer reports the charge its x-ms-request-charge header carried (the emulator: a flat 1)', async () => {
    const { charges, store } = await rig();
    await store.complete(claimOf(await store.claim(freshKey(), digest)), 'ok');
    expect(charges).toHaveLength(2);
    for (const charge of charges) expect(charge.requestCharge).toBe(1);
  });
});

describe('CosmosIdempotencyStore: _etag fencing', () => {
  test('concurrent takeovers of a lapsed claim by two processes: exactly one wins, the others see it in progress; the loser and the old claim are fenced', async () => {
    const { container, clock, store } = await rig();
    const other = new CosmosIdempotencyStore(container, { leaseMs: LEASE_MS, retentionMs: RETENTION_MS, clock });
    const key = freshKey();
    const first = claimOf(await store.claim(key, digest));
    clock.advance(LEASE_MS);
    const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).claim(key, digest)));
    const winners = outcomes.filter((o) => o.kind === 'reclaimed');
    expect(winners).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'inProgress')).toHaveLength(7);
    expect(claimOf(winners[0])).toMatchObject({ attempt: 2 });
    await expect(store.complete(first, 'stale')).rejects.toBeInstanceOf(LeaseLostError);
    await other.complete(claimOf(winners[0]), 'fresh');
    expect(await store.get(key)).toMatchObject({ status: 'COMPLETED', attempt: 2, result: 'fresh' });
  });

  test("a takeover deletes the previous attempt's rows it does not write again, in its batch; a row already gone does not block it", async () => {
    const { container, clock, store } = await rig();
    const key = freshKey();
    const recordId = store.recordIdOf(key);
    claimOf(
      await store.claim(key, digest, {
        effects: [
          { name: 'a', properties: { v: 1 } },
          { name: 'b', properties: { v: 2 } },
          { name: 'c', properties: { v: 3 } },
        ],
      }),
    );
    await container.item(`${recordId}~c`, recordId).delete(); // by hand: a listed row that is missing
    clock.advance(LEASE_MS);
    const second = await store.claim(key, digest, { effects: [{ name: 'a', properties: { v: 10 } }] });
    expect(second).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2, localRows: ['a'] } });
    expect(await localRowsInContainer(container, recordId)).toEqual(new Map([['a', { v: 10 }]]));
  });
});

describe('CosmosIdempotencyStore: claimMany', () => {
  test('one key failing fails the call and gives back the claims it made (released: the retry takes them at once)', async () => {
    const { container, store } = await rig();
    const [fresh, odd] = [freshKey(), freshKey()];
    await store.commit(odd, digest, 'ok');
    const recordId = store.recordIdOf(odd);
    const marker = (await readDoc(container, recordId, recordId))!;
    await container.items.upsert({ ...marker, status: 'FROM_A_NEWER_VERSION' }); // a status this version does not know
    await expect(
      store.claimMany([
        { key: fresh, digest },
        { key: odd, digest },
      ]),
    ).rejects.toBeInstanceOf(UnknownRecordStatusError);
    expect(await store.get(fresh)).toMatchObject({ status: 'RELEASED', lastError: 'claimMany failed on another key' });
    expect(await store.claim(fresh, digest)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
  });
});

describe('CosmosIdempotencyStore: deadlines and the truth about lost answers', () => {
  test('a store that never answers fails each call by its deadline; a claim says it may have landed, a read that nothing was decided', async () => {
    const silent = await SilentServer.start();
    const client = cosmosClientFor(`http://127.0.0.1:${silent.port}`);
    try {
      const store = new CosmosIdempotencyStore(client.database('d').container('c'), { retentionMs: RETENTION_MS, callTimeoutMs: 300 });
      const started = Date.now();
      const claim = await store.claim(freshKey(), digest).catch((error: unknown) => error);
      expect(claim).toBeInstanceOf(StoreUnavailableError);
      expect(claim).toMatchObject({ writeMayHaveLanded: true });
      const read = await store.get(freshKey()).catch((error: unknown) => error);
      expect(read).toBeInstanceOf(StoreUnavailableError);
      expect(read).toMatchObject({ writeMayHaveLanded: false });
      // Generous bound for a loaded machine: 3 calls of 300 ms each, never the SDK's own timeouts (seconds).
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(silent.bytesReceived).toBeGreaterThan(0);
    } finally {
      client.dispose();
      await silent.stop();
    }
  });

  test('a closed port: connection refused, nothing was decided', async () => {
    const dead = await CosmosEmulator.start();
    const endpoint = dead.endpoint;
    await dead.stop();
    const client = cosmosClientFor(endpoint);
    try {
      const store = new CosmosIdempotencyStore(client.database('d').container('c'), { retentionMs: RETENTION_MS, callTimeoutMs: 10_000 });
      const error = await store.claim(freshKey(), digest).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ writeMayHaveLanded: false });
    } finally {
      client.dispose();
    }
  });
});

describe("CosmosIdempotencyStore: a conditional write needs the claim's ETag", () => {
  test.each([
    ['undefined', undefined],
    ['empty', ''],
  ])('complete, release and renewLease with an %s ETag are refused before any request, and the record is untouched', async (_, etag) => {
    const { store, charges } = await rig();
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest, { effects: [{ name: 'payment', properties: { amount: 5 } }] }));
    const sentBefore = charges.length;
    const broken = { ...claim, etag: etag as unknown as string };
    for (const [operation, call] of [
      ['complete', () => store.complete(broken, { ok: true })],
      ['release', () => store.release(broken, 'failed')],
      ['renewLease', () => store.renewLease(broken)],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreRequestError);
      expect(error).toMatchObject({ operation, retryable: false });
      expect((error as Error).message).toBe(
        `cosmos store refused ${operation}: the claim's ETag is ${etag === '' ? 'empty' : 'undefined'}, and a conditional write without one would match ` +
          'any version of the record (If-Match *); pass the claim (or record) as the store returned it',
      );
    }
    expect(charges.length).toBe(sentBefore);
    expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS', etag: claim.etag, attempt: 1 });
  });
});
