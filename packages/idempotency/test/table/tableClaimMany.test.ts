import { RestError } from '@azure/core-rest-pipeline';
import {
  keyFromMessageId,
  payloadDigest,
  RecordStatus,
  StoreUnavailableError,
  TableIdempotencyStore,
  UnknownRecordStatusError,
  type ClaimOutcome,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../../../../test/support/azurite';
import { claimOf, clientOn, countRequests, DAY_MS, failureOf, onRequests, storeOn } from './tableFaults';

/**
 * The Table store's batch claims on Azurite (tableClaimMany.ts): one transaction per partition and 100 keys, the
 * decisions on what a failed transaction found, the cache, and a transaction without an answer.
 */
const azuriteOf = useAzurite();
const digest = payloadDigest({ event: 'e' });
let n = 0;
const keys = (count: number): IdempotencyKey[] => Array.from({ length: count }, () => keyFromMessageId('events', `b-${++n}`));
const requestsOf = (list: IdempotencyKey[], d = digest) => list.map((key) => ({ key, digest: d }));
const kinds = (outcomes: ClaimOutcome[]) => outcomes.map((o) => o.kind);
const isBatch = (request: { method: string; url: string }) => request.method === 'POST' && request.url.includes('$batch');

describe('claimMany on Azurite', () => {
  test('150 fresh keys of one partition: two transactions (at most 100 actions each), every key claimed as its own record', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const batch = keys(150);
    const requests = countRequests(client);
    const outcomes = await store.claimMany(requestsOf(batch));
    expect(kinds(outcomes)).toEqual(batch.map(() => 'claimed'));
    expect(requests.of('POST')).toBe(2);
    expect(new Set(outcomes.map((o) => claimOf(o).ownerId)).size).toBe(150);
    for (const [i, outcome] of outcomes.entries()) {
      expect(claimOf(outcome)).toMatchObject({ key: batch[i], digest, attempt: 1, recordId: store.addressOf(batch[i]).rowKey });
    }
    const record = await store.get(batch[149]);
    expect(record).toMatchObject({ status: RecordStatus.InProgress, ownerId: claimOf(outcomes[149]).ownerId, etag: claimOf(outcomes[149]).etag });
  });

  test('exactly 100 fresh keys of one partition: one transaction, nothing else sent', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const batch = keys(100);
    const requests = countRequests(client);
    expect(kinds(await store.claimMany(requestsOf(batch)))).toEqual(batch.map(() => 'claimed'));
    expect(requests.total()).toBe(1);
  });

  test('one key alone is a plain insert, not a transaction; found again it is decided from the read', async () => {
    const { store, client, clock } = await storeOn(azuriteOf(), { leaseMs: 30_000 });
    const [key] = keys(1);
    const requests = countRequests(client);
    const urls: string[] = [];
    onRequests(client, { before: (request) => void urls.push(request.url) });
    const [first] = await store.claimMany(requestsOf([key]));
    expect(claimOf(first).leaseExpiresAtMs).toBe(clock.now + 30_000);
    expect(requests.of('POST')).toBe(1);
    expect(urls.filter((url) => url.includes('$batch'))).toEqual([]);
    expect(requests.total()).toBe(1);
    await store.complete(claimOf(first), 'done');
    const replay = await store.claimMany(requestsOf([key]));
    expect(replay).toHaveLength(1);
    expect(replay[0]).toMatchObject({ kind: 'duplicate', cached: false, record: { result: 'done' } });
  });

  test('completed keys in the cache answer at once (duplicate or key reuse, cached); the rest go to the table', async () => {
    const { store, client } = await storeOn(azuriteOf(), { cacheSize: 100 });
    const [done, reused, fresh] = keys(3);
    await store.commit(done, digest, 1);
    await store.commit(reused, digest, 2);
    const other = payloadDigest({ event: 'other' });
    const requests = countRequests(client);
    const outcomes = await store.claimMany([
      { key: done, digest },
      { key: reused, digest: other },
      { key: fresh, digest },
    ]);
    expect(outcomes[0]).toMatchObject({ kind: 'duplicate', cached: true, record: { result: 1 } });
    expect(outcomes[1]).toEqual(expect.objectContaining({ kind: 'keyReused', cached: true, digest: other }));
    expect(outcomes[2].kind).toBe('claimed');
    expect(requests.total()).toBe(1);
  });

  test('a replayed batch: completed keys are duplicates and cached, another payload is key reuse naming its digest, a held key in progress', async () => {
    const { store, client, clock } = await storeOn(azuriteOf(), { partitionCount: 1, cacheSize: 100 });
    const writer = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, clock, partitionCount: 1 });
    const [done, reused, held, fresh] = keys(4);
    await writer.commit(done, digest, 'a');
    await writer.commit(reused, digest, 'b');
    const holder = claimOf(await writer.claim(held, digest));
    const other = payloadDigest({ event: 'x' });
    const outcomes = await store.claimMany([
      { key: done, digest },
      { key: reused, digest: other },
      { key: held, digest },
      { key: fresh, digest },
    ]);
    expect(outcomes[0]).toMatchObject({ kind: 'duplicate', cached: false, record: { result: 'a' } });
    expect(outcomes[1]).toEqual(expect.objectContaining({ kind: 'keyReused', cached: false, digest: other }));
    expect(outcomes[2]).toMatchObject({ kind: 'inProgress', record: { ownerId: holder.ownerId } });
    expect(outcomes[3]).toMatchObject({ kind: 'claimed', claim: { attempt: 1 } });
    expect(await store.claim(done, digest)).toMatchObject({ kind: 'duplicate', cached: true });
  });

  test('a record of a status this version does not know fails the batch with UnknownRecordStatusError', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const [odd, fresh] = keys(2);
    claimOf(await store.claim(odd, digest));
    const { partitionKey, rowKey } = store.addressOf(odd);
    await client.updateEntity({ partitionKey, rowKey, status: 'ARCHIVED' }, 'Merge');
    expect(await failureOf(store.claimMany(requestsOf([odd, fresh])))).toBeInstanceOf(UnknownRecordStatusError);
  });

  test('a fresh key another claimant inserts between the read and the second transaction is decided one by one', async () => {
    const { store, client, clock } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const rival = new TableIdempotencyStore(clientOn(azuriteOf(), client.tableName), { retentionMs: 7 * DAY_MS, clock, partitionCount: 1 });
    const [done, raced, fresh] = keys(3);
    await store.commit(done, digest, 'r');
    let armed = true;
    onRequests(client, {
      after: async (request) => {
        if (!armed || request.method !== 'GET') return;
        armed = false;
        claimOf(await rival.claim(raced, digest));
      },
    });
    const requests = countRequests(client);
    expect(kinds(await store.claimMany(requestsOf([done, raced, fresh])))).toEqual(['duplicate', 'inProgress', 'claimed']);
    expect(armed).toBe(false);
    // The failed transaction, the read, the second (failed) transaction, then one claim each: insert, and a failed insert and its read.
    expect(requests.of('POST')).toBe(4);
  });

  test('a transaction whose answer was lost after it landed: the error says so, and this store takes those keys over at once', async () => {
    const { store, client, clock } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const batch = keys(3);
    let armed = true;
    onRequests(
      client,
      {
        after: (request) => {
          if (armed && isBatch(request)) {
            armed = false;
            throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
          }
        },
      },
      true,
    );
    const error = (await failureOf(store.claimMany(requestsOf(batch)))) as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.writeMayHaveLanded).toBe(true);
    const other = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, clock, partitionCount: 1 });
    expect((await other.claim(batch[0], digest)).kind).toBe('inProgress');
    expect(kinds(await store.claimMany(requestsOf(batch)))).toEqual(['reclaimed', 'reclaimed', 'reclaimed']);
  });

  test('a batch refused by the service (no answer about the entities) is thrown as it is, and nothing is remembered', async () => {
    const { store, client, clock } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const batch = keys(2);
    let armed = true;
    onRequests(
      client,
      {
        before: (request) => {
          if (armed && isBatch(request)) {
            armed = false;
            throw new RestError('connect ECONNREFUSED', { code: 'ECONNREFUSED', request });
          }
        },
      },
      true,
    );
    const error = (await failureOf(store.claimMany(requestsOf(batch)))) as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.writeMayHaveLanded).toBe(false);
    expect(error.operation).toBe('claimMany');
    const other = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, clock, partitionCount: 1 });
    claimOf(await other.claim(batch[0], digest));
    expect(kinds(await store.claimMany(requestsOf(batch)))).toEqual(['inProgress', 'claimed']);
  });

  test('a key written unseen stays ours to take over after a later batch with it was refused unsent; one key alone names claimMany', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const batch = keys(2);
    let mode: 'lose-answer' | 'refuse' | 'off' = 'lose-answer';
    onRequests(
      client,
      {
        before: (request) => {
          if (mode === 'refuse' && request.method === 'POST') throw new RestError('connect ECONNREFUSED', { code: 'ECONNREFUSED', request });
        },
        after: (request) => {
          if (mode === 'lose-answer' && request.method === 'POST') throw new RestError('socket hang up', { code: 'ECONNRESET', request });
        },
      },
      true,
    );
    // batch[0] alone: a plain insert that lands, its answer lost.
    const lost = (await failureOf(store.claimMany(requestsOf([batch[0]])))) as StoreUnavailableError;
    expect(lost).toMatchObject({ writeMayHaveLanded: true, operation: 'claimMany' });
    // Both keys: refused before it was sent. Nothing of this batch can land; batch[0] is still the claim written unseen.
    mode = 'refuse';
    expect(await failureOf(store.claimMany(requestsOf(batch)))).toMatchObject({ writeMayHaveLanded: false });
    mode = 'off';
    expect(kinds(await store.claimMany(requestsOf(batch)))).toEqual(['reclaimed', 'claimed']);
  });
});
