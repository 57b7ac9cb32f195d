import type { TableClient } from '@azure/data-tables';
import { RestError } from '@azure/core-rest-pipeline';
import {
  keyFromMessageId,
  LeaseLostError,
  payloadDigest,
  RecordStatus,
  ResultTooLargeError,
  StoreRequestError,
  StoreUnavailableError,
  TableIdempotencyStore,
  type ClaimOutcome,
  type TableIdempotencyStoreOptions,
} from 'azure-functions-idempotency/internal';
import { AzuriteTable, useAzurite } from '../../../../test/support/azurite';
import { FakeClock, freshTable } from '../../../../test/support/tables';
import { onRequests } from './tableFaults';

const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();

async function newStore(options: Partial<TableIdempotencyStoreOptions> = {}): Promise<{ store: TableIdempotencyStore; client: TableClient; clock: FakeClock }> {
  const clock = new FakeClock();
  const client = await freshTable(azuriteOf());
  const store = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, leaseMs: 60_000, clock, ...options });
  return { store, client, clock };
}

const key = keyFromMessageId('payments', 'pay-1');
const digest = payloadDigest({ paymentId: 'pay-1', amount: 100 });
const otherDigest = payloadDigest({ paymentId: 'pay-1', amount: 999 });

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

describe('TableIdempotencyStore on Azurite', () => {
  test('claim: a fresh key is claimed with attempt 1 and a lease', async () => {
    const { store, clock } = await newStore();
    const claim = claimOf(await store.claim(key, digest));
    expect(claim.attempt).toBe(1);
    expect(claim.leaseExpiresAtMs).toBe(clock.now + 60_000);
    const record = await store.get(key);
    expect(record).toMatchObject({ status: RecordStatus.InProgress, digest, attempt: 1, key: 'pay-1', consumer: 'payments' });
    expect(record?.retentionExpiresAtMs).toBe(clock.now + 7 * DAY_MS);
  });

  test('claim: 50 concurrent claims of one key yield exactly one winner', async () => {
    const { store } = await newStore();
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => store.claim(key, digest)));
    const kinds = outcomes.map((o) => o.kind);
    expect(kinds.filter((k) => k === 'claimed')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'inProgress')).toHaveLength(49);
  });

  test('claim: 50 concurrent claims through 50 separate stores (processes) yield exactly one winner', async () => {
    const { client, clock } = await newStore();
    const stores = Array.from({ length: 50 }, () => new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock }));
    const outcomes = await Promise.all(stores.map((s) => s.claim(key, digest)));
    expect(outcomes.filter((o) => o.kind === 'claimed')).toHaveLength(1);
  });

  test('complete: a later duplicate gets the stored result; another payload is key reuse', async () => {
    const { store } = await newStore();
    const claim = claimOf(await store.claim(key, digest));
    const completed = await store.complete(claim, { chargeId: 'ch_1', amount: 100 });
    expect(completed.status).toBe(RecordStatus.Completed);
    const again = await store.claim(key, digest);
    expect(again).toMatchObject({ kind: 'duplicate', cached: false, record: { result: { chargeId: 'ch_1', amount: 100 } } });
    const reused = await store.claim(key, otherDigest);
    expect(reused).toMatchObject({ kind: 'keyReused', digest: otherDigest, record: { digest } });
  });

  test('claim: an in-progress key with another payload is key reuse, not in progress', async () => {
    const { store } = await newStore();
    claimOf(await store.claim(key, digest));
    expect((await store.claim(key, otherDigest)).kind).toBe('keyReused');
  });

  test('claim: the same message id under two consumers never blocks the other', async () => {
    const { store } = await newStore();
    expect((await store.claim(keyFromMessageId('payments', 'm'), digest)).kind).toBe('claimed');
    expect((await store.claim(keyFromMessageId('audit', 'm'), digest)).kind).toBe('claimed');
  });

  test('takeover: 20 concurrent takeovers of a lapsed lease yield exactly one winner with attempt 2', async () => {
    const { store, clock } = await newStore();
    claimOf(await store.claim(key, digest));
    clock.advance(60_001);
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => store.claim(key, digest)));
    const winners = outcomes.filter((o) => o.kind === 'reclaimed');
    expect(winners).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'inProgress')).toHaveLength(19);
    expect(claimOf(winners[0]).attempt).toBe(2);
    expect(winners[0]).toMatchObject({ previousAttempt: 1, previousStatus: RecordStatus.InProgress });
  });

  test('takeover: a lease that has not lapsed is not taken over', async () => {
    const { store, clock } = await newStore();
    claimOf(await store.claim(key, digest));
    clock.advance(59_999);
    expect((await store.claim(key, digest)).kind).toBe('inProgress');
  });

  test('fencing: a stale owner can neither complete, release nor renew after a takeover', async () => {
    const { store, clock } = await newStore();
    const stale = claimOf(await store.claim(key, digest));
    clock.advance(60_001);
    const owner = claimOf(await store.claim(key, digest));
    await expect(store.complete(stale, { chargeId: 'stale' })).rejects.toThrow(LeaseLostError);
    await expect(store.release(stale, 'stale')).rejects.toThrow(LeaseLostError);
    await expect(store.renewLease(stale)).rejects.toThrow(LeaseLostError);
    await store.complete(owner, { chargeId: 'owner' });
    expect((await store.get(key))?.result).toEqual({ chargeId: 'owner' });
    expect((await store.get(key))?.attempt).toBe(2);
  });

  test('release: the next claim takes over at once with the next attempt; the reason is kept', async () => {
    const { store } = await newStore();
    const first = claimOf(await store.claim(key, digest));
    await store.release(first, 'ProviderTimeout: no answer in 10 s');
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.Released, lastError: 'ProviderTimeout: no answer in 10 s' });
    const second = await store.claim(key, digest);
    expect(second).toMatchObject({ kind: 'reclaimed', previousStatus: RecordStatus.Released, claim: { attempt: 2 } });
  });

  test('renewLease: extends the lease so others still see it in progress', async () => {
    const { store, clock } = await newStore();
    const claim = claimOf(await store.claim(key, digest));
    clock.advance(50_000);
    const renewed = await store.renewLease(claim);
    clock.advance(50_000);
    expect((await store.claim(key, digest)).kind).toBe('inProgress');
    await store.complete(renewed, 'ok');
    await expect(store.complete(claim, 'old etag')).rejects.toThrow(LeaseLostError);
  });

  test('retention: an expired completed record counts as absent and is claimed afresh', async () => {
    const { store, clock } = await newStore();
    await store.complete(claimOf(await store.claim(key, digest)), 'done');
    clock.advance(7 * DAY_MS + 1);
    const outcome = await store.claim(key, otherDigest);
    expect(outcome).toMatchObject({ kind: 'reclaimed', previousStatus: RecordStatus.Completed, claim: { attempt: 2 } });
  });

  test('keys with every forbidden character, control characters, non-ASCII and 8,192 characters work', async () => {
    const { store } = await newStore();
    const keys = ['a/b\\c#d?e', '\u0000\u0001\u001f\u007f\n\r\t', 'ödeme/ğüşıç#支付?😀', 'k'.repeat(8192), '/'];
    for (const raw of keys) {
      const k = keyFromMessageId('payments', raw);
      const claim = claimOf(await store.claim(k, digest));
      await store.complete(claim, { raw: raw.length });
      expect(await store.claim(k, digest)).toMatchObject({ kind: 'duplicate', record: { key: raw, result: { raw: raw.length } } });
    }
  });

  test('result: a result past the bound is a clear error and the claim stays usable', async () => {
    const { store } = await newStore({ maxResultBytes: 1000 });
    const claim = claimOf(await store.claim(key, digest));
    await expect(store.complete(claim, { blob: 'x'.repeat(1000) })).rejects.toThrow(ResultTooLargeError);
    await expect(store.complete(claim, { blob: 'x'.repeat(1000) })).rejects.toThrow(/more than the limit of 1000 bytes/);
    await store.complete(claim, { small: true });
    expect((await store.get(key))?.result).toEqual({ small: true });
  });

  test('commit: marker and local effects in one transaction; a duplicate commit changes nothing', async () => {
    const { store, client } = await newStore();
    const effects = [{ name: 'payment', properties: { amount: 100, currency: 'EUR' } }];
    const first = await store.commit(key, digest, { ok: 1 }, effects);
    expect(first).toMatchObject({ kind: 'committed', takeover: false, record: { status: RecordStatus.Completed, result: { ok: 1 } } });
    const address = store.addressOf(key);
    const effect = await client.getEntity(address.partitionKey, `${address.rowKey}~payment`);
    expect(effect).toMatchObject({ amount: 100, currency: 'EUR', kind: 'payment' });
    const again = await store.commit(key, digest, { ok: 2 }, [{ name: 'payment', properties: { amount: 1, currency: 'X' } }]);
    expect(again).toMatchObject({ kind: 'duplicate', record: { result: { ok: 1 } } });
    expect(await client.getEntity(address.partitionKey, `${address.rowKey}~payment`)).toMatchObject({ amount: 100 });
  });

  test('commit: 30 concurrent commits with effects yield exactly one committed', async () => {
    const { store } = await newStore();
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => store.commit(key, digest, { writer: i }, [{ name: 'payment', properties: { writer: i } }])),
    );
    expect(outcomes.filter((o) => o.kind === 'committed')).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'duplicate')).toHaveLength(29);
  });

  test('cache: a hot duplicate is answered from memory with no store call', async () => {
    const { store, client } = await newStore({ cacheSize: 10 });
    await store.complete(claimOf(await store.claim(key, digest)), 'r');
    let calls = 0;
    const originalGet = client.getEntity.bind(client);
    const originalCreate = client.createEntity.bind(client);
    client.getEntity = (...args: Parameters<typeof originalGet>) => (calls++, originalGet(...args));
    client.createEntity = (...args: Parameters<typeof originalCreate>) => (calls++, originalCreate(...args));
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: true, record: { result: 'r' } });
    expect(await store.claim(key, otherDigest)).toMatchObject({ kind: 'keyReused', cached: true });
    expect(calls).toBe(0);
  });

  test('cache: a completed record the `cacheable` option rejects is never cached, so a duplicate after another process reopened it is not answered with its old result', async () => {
    const reopenable = (record: { result: unknown }) => (record.result as { status?: string } | undefined)?.status !== 'failed';
    const { store, client } = await newStore({ cacheSize: 10, cacheable: reopenable });
    const failed = await store.complete(claimOf(await store.claim(key, digest)), { status: 'failed' });
    // Neither the completion nor a duplicate's read put it in the cache.
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false, record: { result: { status: 'failed' } } });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false });
    // Another process reopens it, as the payments operator's retry does (COMPLETED -> RELEASED, If-Match).
    const address = store.addressOf(key);
    await client.updateEntity({ partitionKey: address.partitionKey, rowKey: address.rowKey, status: RecordStatus.Released }, 'Merge', { etag: failed.etag });
    const retried = claimOf(await store.claim(key, digest));
    expect(retried.attempt).toBe(2);
    await store.complete(retried, { status: 'succeeded' });
    // An accepted result is cached as usual.
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: true, record: { result: { status: 'succeeded' } } });
  });

  test('cache: without the `cacheable` option a reopened record is answered from the cache with its old result (why the option exists)', async () => {
    const { store, client } = await newStore({ cacheSize: 10 });
    const failed = await store.complete(claimOf(await store.claim(key, digest)), { status: 'failed' });
    const address = store.addressOf(key);
    await client.updateEntity({ partitionKey: address.partitionKey, rowKey: address.rowKey, status: RecordStatus.Released }, 'Merge', { etag: failed.etag });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: true, record: { result: { status: 'failed' } } });
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.Released });
  });

  test('cache: claimMany fills the cache only with records `cacheable` accepts', async () => {
    const keep = keyFromMessageId('payments', 'pay-keep');
    const skip = keyFromMessageId('payments', 'pay-skip');
    const { store, client, clock } = await newStore({ cacheSize: 10, cacheable: (record) => record.key !== 'pay-skip' });
    // Completed by another process: this store's cache starts empty.
    const writer = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, clock });
    await writer.commit(keep, digest, 'k');
    await writer.commit(skip, digest, 's');
    const requests = [
      { key: keep, digest },
      { key: skip, digest },
    ];
    expect(await store.claimMany(requests)).toMatchObject([
      { kind: 'duplicate', cached: false },
      { kind: 'duplicate', cached: false },
    ]);
    expect(await store.claimMany(requests)).toMatchObject([
      { kind: 'duplicate', cached: true, record: { result: 'k' } },
      { kind: 'duplicate', cached: false, record: { result: 's' } },
    ]);
  });

  test('cache: in-progress keys are never cached', async () => {
    const { store, clock } = await newStore({ cacheSize: 10 });
    claimOf(await store.claim(key, digest));
    expect((await store.claim(key, digest)).kind).toBe('inProgress');
    clock.advance(60_001);
    expect((await store.claim(key, digest)).kind).toBe('reclaimed');
  });
});

/** Lets the next request of `method` reach the server, then loses its answer (the SDK retries it). */
function loseNextAnswer(client: TableClient, method: string): { lost: () => number } {
  let armed = true;
  let lost = 0;
  client.pipeline.addPolicy(
    {
      name: 'loseAnswer',
      sendRequest: async (request, next) => {
        const response = await next(request);
        if (armed && request.method === method) {
          armed = false;
          lost++;
          throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
        }
        return response;
      },
    },
    { afterPhase: 'Retry' },
  );
  return { lost: () => lost };
}

describe('TableIdempotencyStore when an answer is lost after the server acted', () => {
  test('claim: an insert whose answer was lost (SDK retry gets 409) is still our claim, not "in progress"', async () => {
    const { store, client } = await newStore();
    const faults = loseNextAnswer(client, 'POST');
    const outcome = await store.claim(key, digest);
    expect(faults.lost()).toBe(1);
    expect(outcome.kind).toBe('claimed');
    await store.complete(claimOf(outcome), 'ok');
  });

  test('complete: a completion whose answer was lost (SDK retry gets 412) is not reported as a lost lease', async () => {
    const { store, client } = await newStore();
    const claim = claimOf(await store.claim(key, digest));
    const faults = loseNextAnswer(client, 'PATCH'); // a completion is a conditional merge
    const record = await store.complete(claim, { ok: true });
    expect(faults.lost()).toBe(1);
    expect(record).toMatchObject({ status: RecordStatus.Completed, result: { ok: true }, attempt: 1 });
  });

  test('takeover: an update whose answer was lost is still our claim', async () => {
    const { store, client, clock } = await newStore();
    claimOf(await store.claim(key, digest));
    clock.advance(60_001);
    const faults = loseNextAnswer(client, 'PUT');
    const outcome = await store.claim(key, digest);
    expect(faults.lost()).toBe(1);
    expect(outcome).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
  });
});

describe('TableIdempotencyStore with the store down', () => {
  test('claim, complete and get fail with a retryable StoreUnavailableError, never a false duplicate or claim', async () => {
    const own = await AzuriteTable.start();
    try {
      const clock = new FakeClock();
      const client = await freshTable(own);
      const store = new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock });
      const claim = claimOf(await store.claim(key, digest));
      await own.stop();
      const failure = await store.claim(key, digest).then(
        (outcome) => outcome,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect((failure as StoreUnavailableError).retryable).toBe(true);
      expect((failure as StoreUnavailableError).message).toMatch(/table store unavailable during claim .*retry later/);
      await expect(store.complete(claim, 'x')).rejects.toThrow(StoreUnavailableError);
      await expect(store.get(key)).rejects.toThrow(StoreUnavailableError);
      await expect(store.claim(keyFromMessageId('payments', 'other'), digest)).rejects.toThrow(StoreUnavailableError);
    } finally {
      await own.stop();
    }
  });
});

describe("TableIdempotencyStore: a conditional write needs the claim's ETag", () => {
  // @azure/data-tables sends If-Match * for an undefined ETag: the write would land on any version of the record.
  test.each([
    ['undefined', undefined],
    ['empty', ''],
  ])('complete, release and renewLease with an %s ETag are refused before any request, and the record is untouched', async (_, etag) => {
    const { store, client } = await newStore();
    const claim = claimOf(await store.claim(key, digest));
    const sent: string[] = [];
    onRequests(client, { before: (request) => void sent.push(request.method) });
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
        `table store refused ${operation}: the claim's ETag is ${etag === '' ? 'empty' : 'undefined'}, and a conditional write without one would match ` +
          'any version of the record (If-Match *); pass the claim (or record) as the store returned it',
      );
    }
    expect(sent).toEqual([]);
    const record = await store.get(key);
    expect(record).toMatchObject({ status: RecordStatus.InProgress, etag: claim.etag, attempt: 1 });
  });
});
