import { RestError } from '@azure/core-rest-pipeline';
import { keyFromMessageId, LeaseLostError, MAX_REASON_LENGTH, payloadDigest, RecordStatus } from 'azure-functions-idempotency/internal';
import { useAzurite } from '../../../../test/support/azurite';
import { claimOf, countRequests, failureOf, onRequests, storeOn } from './tableFaults';

/**
 * The Table store's own workflow on Azurite (TableIdempotencyStore.ts): what a caller reads back from a claim, commit,
 * release, renewal and reopen, and the rewrite's answers when its condition fails.
 */
const azuriteOf = useAzurite();
const digest = payloadDigest({ paymentId: 'pay-m', amount: 5 });
let n = 0;
const freshKey = () => keyFromMessageId('payments', `m-${++n}`);

describe('TableIdempotencyStore: what its writes leave and report', () => {
  test('a takeover reports the status and attempt of the record it replaced', async () => {
    const { store, clock } = await storeOn(azuriteOf());
    const key = freshKey();
    await store.release(claimOf(await store.claim(key, digest)), 'first try failed');
    expect(await store.claim(key, digest)).toMatchObject({
      kind: 'reclaimed',
      previousStatus: RecordStatus.Released,
      previousAttempt: 1,
      claim: { attempt: 2 },
    });
    clock.advance(60_001);
    expect(await store.claim(key, digest)).toMatchObject({
      kind: 'reclaimed',
      previousStatus: RecordStatus.InProgress,
      previousAttempt: 2,
      claim: { attempt: 3 },
    });
  });

  test('a commit says whether it took a record over: not for a fresh key, yes for a lapsed claim', async () => {
    const { store, clock } = await storeOn(azuriteOf());
    const fresh = await store.commit(freshKey(), digest, { n: 1 });
    expect(fresh).toMatchObject({ kind: 'committed', takeover: false, record: { status: RecordStatus.Completed, attempt: 1, result: { n: 1 } } });
    const key = freshKey();
    claimOf(await store.claim(key, digest));
    clock.advance(60_001);
    const taken = await store.commit(key, digest, { n: 2 });
    expect(taken).toMatchObject({ kind: 'committed', takeover: true, record: { status: RecordStatus.Completed, attempt: 2, result: { n: 2 } } });
  });

  test('a claim carries the lease, generation, record id and ETag of the marker it wrote', async () => {
    const { store, clock } = await storeOn(azuriteOf(), { leaseMs: 45_000 });
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest, { leaseMs: 30_000 }));
    const record = await store.get(key);
    expect(claim).toMatchObject({
      key,
      digest,
      attempt: 1,
      recordId: store.addressOf(key).rowKey,
      leaseExpiresAtMs: clock.now + 30_000,
      createdAtMs: clock.now,
    });
    expect(claim.etag).toBe(record?.etag);
    expect(claim.ownerId).toBe(record?.ownerId);
    // Without a lease of its own, a claim and a renewal take the store's.
    const other = claimOf(await store.claim(freshKey(), digest));
    expect(other.leaseExpiresAtMs).toBe(clock.now + 45_000);
    clock.advance(1_000);
    expect((await store.renewLease(other)).leaseExpiresAtMs).toBe(clock.now + 45_000);
  });

  test('a release keeps the first 1,024 characters of its reason; a reason that is not a string is written as text', async () => {
    const { store } = await storeOn(azuriteOf());
    const key = freshKey();
    const reason = `${'x'.repeat(MAX_REASON_LENGTH)}TAIL`;
    await store.release(claimOf(await store.claim(key, digest)), reason);
    expect((await store.get(key))?.lastError).toBe('x'.repeat(MAX_REASON_LENGTH));
    const other = freshKey();
    await store.release(claimOf(await store.claim(other, digest)), 42 as unknown as string);
    expect(await store.get(other)).toMatchObject({ status: RecordStatus.Released, lastError: '42', leaseExpiresAtMs: 0 });
  });

  test('a completion keeps the local rows the claim already had and adds its own; readLocalRow reads one back, a missing one is undefined', async () => {
    const { store } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest, { effects: [{ name: 'first', properties: { a: 1 } }] }));
    const record = await store.complete(claim, 'done', [{ name: 'second', properties: { b: 'two' } }]);
    expect([...record.localRows].sort()).toEqual(['first', 'second']);
    expect(await store.readLocalRow(key, 'second')).toEqual({ b: 'two' });
    expect(await store.readLocalRow(key, 'first')).toEqual({ a: 1 });
    expect(await store.readLocalRow(key, 'third')).toBeUndefined();
  });

  test('reopen forgets the completed record this process cached: its next claim takes the key over, not a cached duplicate', async () => {
    const { store } = await storeOn(azuriteOf(), { cacheSize: 100 });
    const key = freshKey();
    const completed = await store.complete(claimOf(await store.claim(key, digest)), { paid: true });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: true });
    expect(await store.reopen(completed, 'operator: charge again')).toMatchObject({ kind: 'reopened' });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', previousStatus: RecordStatus.Released, claim: { attempt: 2 } });
  });

  test('a commit answered from the cache reports the cached record, and another payload there is key reuse', async () => {
    const { store, client } = await storeOn(azuriteOf(), { cacheSize: 100 });
    const key = freshKey();
    await store.commit(key, digest, { v: 1 });
    const requests = countRequests(client);
    expect(await store.commit(key, digest, { v: 2 })).toMatchObject({ kind: 'duplicate', cached: true, record: { result: { v: 1 } } });
    expect(await store.commit(key, payloadDigest({ other: true }), { v: 3 })).toMatchObject({ kind: 'keyReused', cached: true });
    expect(requests.total()).toBe(0);
  });

  test('a store without a cache answers every duplicate from the table', async () => {
    const { store, client } = await storeOn(azuriteOf(), { cacheSize: 0 });
    const key = freshKey();
    await store.commit(key, digest, 'r');
    const requests = countRequests(client);
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false });
    expect(requests.total()).toBe(4);
  });
});

describe('TableIdempotencyStore: a rewrite whose condition failed', () => {
  test('a completion with local rows whose answer was lost is recognised by its rows: done, not a lost lease', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    let lost = 0;
    onRequests(client, {
      after: (request) => {
        if (request.method === 'POST' && request.url.includes('$batch') && lost++ === 0)
          throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
      },
    });
    const record = await store.complete(claim, 'ok', [{ name: 'ledger', properties: { amount: 5 } }]);
    expect(lost).toBeGreaterThanOrEqual(1);
    expect(record).toMatchObject({ status: RecordStatus.Completed, result: 'ok', localRows: ['ledger'] });
  });

  test('a completion whose marker landed but whose row differs from what it meant to write is a lost lease', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    const ledger = `${store.addressOf(key).rowKey}~ledger`;
    let lost = 0;
    onRequests(client, {
      after: async (request) => {
        if (request.method !== 'POST' || !request.url.includes('$batch') || lost++ > 0) return;
        // The transaction landed; before the retry reads it back, the row is changed by someone else.
        await client.updateEntity({ partitionKey: store.addressOf(key).partitionKey, rowKey: ledger, amount: 999 }, 'Merge');
        throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
      },
    });
    const error = await failureOf(store.complete(claim, 'ok', [{ name: 'ledger', properties: { amount: 5 } }]));
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as LeaseLostError).operation).toBe('complete');
  });

  test('a completion with two rows of which someone else changed one after it landed is a lost lease, not done', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    const { partitionKey, rowKey } = store.addressOf(key);
    let lost = 0;
    onRequests(client, {
      after: async (request) => {
        if (request.method !== 'POST' || !request.url.includes('$batch') || lost++ > 0) return;
        await client.updateEntity({ partitionKey, rowKey: `${rowKey}~second`, amount: 999 }, 'Merge');
        throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
      },
    });
    const effects = [
      { name: 'first', properties: { amount: 1 } },
      { name: 'second', properties: { amount: 2 } },
    ];
    expect(await failureOf(store.complete(claim, 'ok', effects))).toBeInstanceOf(LeaseLostError);
  });

  test('a renewal whose answer was lost, on a clock with fractions of a millisecond, is recognised as landed: no write again', async () => {
    const { store, client, clock } = await storeOn(azuriteOf());
    clock.now += 0.5;
    const claim = claimOf(await store.claim(freshKey(), digest));
    clock.advance(10_000);
    let lost = 0;
    onRequests(client, {
      after: (request) => {
        if (request.method === 'PATCH' && lost++ === 0)
          throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
      },
    });
    const requests = countRequests(client);
    const renewed = await store.renewLease(claim);
    expect(renewed.leaseExpiresAtMs).toBe(Math.trunc(clock.now + 60_000));
    // The write, the SDK's retry of it (refused: the ETag moved), and the read that finds it landed.
    expect(requests.of('PATCH')).toBe(2);
    expect(requests.of('GET')).toBe(1);
  });

  test('a release by a claim whose own renewal moved the ETag lands; a release whose answer was lost is done, not a lost lease', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    await store.renewLease(claim);
    await store.release(claim, 'gave up');
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.Released, lastError: 'gave up', attempt: 1 });
    const other = freshKey();
    const held = claimOf(await store.claim(other, digest));
    let lost = 0;
    onRequests(client, {
      after: (request) => {
        if (request.method === 'PATCH' && lost++ === 0)
          throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
      },
    });
    await store.release(held, 'gave up');
    expect(lost).toBe(2); // the release whose answer was lost, and the SDK's retry of it (refused: the ETag moved)
    expect(await store.get(other)).toMatchObject({ status: RecordStatus.Released, lastError: 'gave up' });
  });

  test('an exact completion after a renewal of its own claim is refused; a plain one lands on the renewed record', async () => {
    const { store } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    await store.renewLease(claim);
    const exact = await failureOf(store.complete(claim, 'r', [], { exact: true }));
    expect(exact).toBeInstanceOf(LeaseLostError);
    expect((exact as LeaseLostError).message).toMatch(/complete refused/);
    expect(await store.complete(claim, 'r')).toMatchObject({ status: RecordStatus.Completed, result: 'r' });
  });

  test('a renewal of a claim taken over is a lost lease naming renewLease; a removed record too', async () => {
    const { store, client, clock } = await storeOn(azuriteOf());
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    clock.advance(60_001);
    claimOf(await store.claim(key, digest));
    const error = await failureOf(store.renewLease(claim));
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as LeaseLostError).operation).toBe('renewLease');
    const gone = freshKey();
    const goneClaim = claimOf(await store.claim(gone, digest));
    await client.deleteEntity(store.addressOf(gone).partitionKey, store.addressOf(gone).rowKey);
    const released = await failureOf(store.release(goneClaim, 'x'));
    expect(released).toBeInstanceOf(LeaseLostError);
    expect((released as LeaseLostError).operation).toBe('release');
  });

  test('a reopen the table does not answer fails with the store’s error naming reopen, the record left completed', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    const completed = await store.complete(claimOf(await store.claim(key, digest)), { ok: 1 });
    let down = true;
    onRequests(
      client,
      {
        before: (request) => {
          if (down && request.method !== 'GET') throw new RestError('service unavailable', { statusCode: 503, request });
        },
      },
      true,
    );
    const error = await failureOf(store.reopen(completed, 'operator: charge again'));
    expect(error).toMatchObject({ name: 'StoreUnavailableError', operation: 'reopen' });
    down = false;
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.Completed });
  });

  test('claimMany’s one-by-one claims (a lapsed key taken over) carry the batch’s lease, not the store’s', async () => {
    const { store, clock } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const lapsed = freshKey();
    claimOf(await store.claim(lapsed, digest));
    clock.advance(60_001);
    const [outcome] = await store.claimMany([{ key: lapsed, digest }], { leaseMs: 5_000 });
    expect(outcome).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2, leaseExpiresAtMs: clock.now + 5_000 } });
  });
});
