import { RestError, type PipelineRequest } from '@azure/core-rest-pipeline';
import { freshTable } from '../../../../test/support/tables';
import {
  keyFromMessageId,
  MAX_UNRESOLVED_CLAIMS,
  payloadDigest,
  RecordStatus,
  scopedKeyString,
  StoreUnavailableError,
  TableIdempotencyStore,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../../../../test/support/azurite';
import { FakeClock } from '../../../../test/support/tables';
import { type Around, claimOf, clientOn, countRequests, DAY_MS, failureOf, onRequests, storeOn } from './tableFaults';

/**
 * The Table store's claim workflow on Azurite (tableAcquire.ts): insert-if-absent, takeover on the ETag, the bounded
 * race loop, and the claims whose write got no answer.
 */
const azuriteOf = useAzurite();
const digest = payloadDigest({ paymentId: 'pay-a', amount: 7 });
let n = 0;
const freshKey = () => keyFromMessageId('payments', `a-${++n}`);

/** A connection failure of `request` (no status): before it is sent, or after the service acted. */
const reset = (request: PipelineRequest, code = 'ECONNRESET') => new RestError(`socket failure ${code}`, { code, request });

/** A store on a fresh table, for faults put outside its client's retries (`onRequests(..., true)`). */
async function faultyStore(options: { cacheSize?: number } = {}) {
  const table = await freshTable(azuriteOf());
  const client = clientOn(azuriteOf(), table.tableName);
  const clock = new FakeClock();
  const store = new TableIdempotencyStore(client, { retentionMs: DAY_MS, leaseMs: 60_000, clock, ...options });
  return { store, client, clock, fault: (around: Around) => onRequests(client, around, true) };
}

/** Every insert lands with its answer lost and every read-back fails (a claim written unseen), until `off()`. */
function landUnseen(fault: (around: Around) => void) {
  let on = true;
  fault({
    before: (request) => {
      if (on && request.method === 'GET') throw reset(request);
    },
    after: (request) => {
      if (on && request.method === 'POST') throw reset(request);
    },
  });
  return { off: () => void (on = false) };
}

describe('tableAcquire: the claim workflow on Azurite', () => {
  test('an insert refused because a record exists, which is deleted before the read: the key is inserted again and claimed', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const other = new TableIdempotencyStore(clientOn(azuriteOf(), client.tableName), { retentionMs: DAY_MS });
    const key = freshKey();
    claimOf(await other.claim(key, digest));
    const { partitionKey, rowKey } = store.addressOf(key);
    let armed = true;
    onRequests(client, {
      after: async (request, status) => {
        if (!armed || request.method !== 'POST' || status !== 409) return;
        armed = false;
        await clientOn(azuriteOf(), client.tableName).deleteEntity(partitionKey, rowKey);
      },
    });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'claimed', claim: { attempt: 1 } });
    expect(armed).toBe(false);
  });

  test('a takeover that keeps losing its race gives up after 5 tries with a retryable error naming the key', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    await store.release(claimOf(await store.claim(key, digest)), 'failed');
    const { partitionKey, rowKey } = store.addressOf(key);
    const rival = clientOn(azuriteOf(), client.tableName);
    let bumps = 0;
    onRequests(client, {
      // Another writer changes the record just before each takeover is sent: its ETag condition fails every time.
      before: async (request) => {
        if (request.method === 'PUT') await rival.updateEntity({ partitionKey, rowKey, bump: ++bumps }, 'Merge');
      },
    });
    const requests = countRequests(client);
    const error = await failureOf(store.claim(key, digest));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).message).toBe(`claim of ${JSON.stringify(scopedKeyString(key))} kept racing with other writers; retry later`);
    expect((error as StoreUnavailableError).operation).toBe('claim');
    expect((error as StoreUnavailableError).retryable).toBe(true);
    expect(requests.of('PUT')).toBe(5);
  });

  test('a duplicate found in the table is cached: the next one is answered from memory; key reuse names the new digest', async () => {
    const { store, client, clock } = await storeOn(azuriteOf(), { cacheSize: 10 });
    const writer = new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock });
    const key = freshKey();
    await writer.commit(key, digest, { ok: 1 });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: false, record: { result: { ok: 1 } } });
    const requests = countRequests(client);
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', cached: true });
    expect(requests.total()).toBe(0);
    const reused = freshKey();
    await writer.commit(reused, digest, 'x');
    const other = payloadDigest({ something: 'else' });
    expect(await store.claim(reused, other)).toEqual(expect.objectContaining({ kind: 'keyReused', digest: other, cached: false }));
  });

  test('an insert that never left (connection refused), read back empty: nothing was decided, nothing is remembered', async () => {
    const { store, client, clock, fault } = await faultyStore();
    const key = freshKey();
    let fail = true;
    fault({
      before: (request) => {
        if (fail && request.method === 'POST') throw reset(request, 'ECONNREFUSED');
      },
    });
    const error = (await failureOf(store.claim(key, digest))) as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.writeMayHaveLanded).toBe(false);
    expect(error.message).toMatch(/read back: this claim was not written and can no longer land, nothing was decided; retry later$/);
    expect(error.operation).toBe('claim');
    fail = false;
    // A record another process writes now is in progress for this store too: no claim of its own was remembered.
    const other = new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock });
    claimOf(await other.claim(key, digest));
    expect((await store.claim(key, digest)).kind).toBe('inProgress');
  });

  test('an insert that never left, whose read-back fails too: the first failure as it was', async () => {
    const { store, fault } = await faultyStore();
    fault({
      before: (request) => {
        throw reset(request, 'ECONNREFUSED');
      },
    });
    const error = (await failureOf(store.claim(freshKey(), digest))) as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.writeMayHaveLanded).toBe(false);
    expect(error.message).toBe('table store unavailable during claim (no response ECONNREFUSED); nothing was decided; retry later');
  });

  test('an insert that landed without an answer, whose read-back fails: it may have been written; this store takes it over at once', async () => {
    const { store, client, clock, fault } = await faultyStore();
    const key = freshKey();
    const faults = landUnseen(fault);
    const error = (await failureOf(store.claim(key, digest))) as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.writeMayHaveLanded).toBe(true);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/and the read-back got no answer either: this claim may have been written; /);
    expect(error.message).toMatch(/this process takes it over on its next claim\); retry later$/);
    expect((error.cause as RestError).code).toBe('ECONNRESET');
    expect(error.operation).toBe('claim');
    faults.off();
    const other = new TableIdempotencyStore(client, { retentionMs: DAY_MS, clock });
    expect((await other.claim(key, digest)).kind).toBe('inProgress');
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', previousStatus: RecordStatus.InProgress, claim: { attempt: 2 } });
  });

  test('a claim of ours written unseen is taken over at once only for its own payload; once expired, as a new lifetime', async () => {
    const { store, clock, fault } = await faultyStore();
    const key = freshKey();
    const faults = landUnseen(fault);
    expect(((await failureOf(store.claim(key, digest))) as StoreUnavailableError).writeMayHaveLanded).toBe(true);
    faults.off();
    const firstLifetime = (await store.get(key))!.createdAtMs;
    // Another payload under the key is key reuse, even against a claim of ours it may take over.
    const other = payloadDigest({ paymentId: 'pay-b', amount: 9 });
    expect(await store.claim(key, other)).toMatchObject({ kind: 'keyReused', digest: other });
    // Past retention: the takeover starts a new lifetime (a new createdAtMs), not the old one's.
    clock.advance(2 * DAY_MS);
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
    expect((await store.get(key))!.createdAtMs).toBe(clock.now);
    expect(clock.now).toBeGreaterThan(firstLifetime);
  });

  test('a redelivery reads first: a completed duplicate costs one request', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const key = freshKey();
    await store.complete(claimOf(await store.claim(key, digest)), { ok: 1 });
    const requests = countRequests(client);
    expect(await store.claim(key, digest, { readFirst: true })).toMatchObject({ kind: 'duplicate', cached: false });
    expect(requests.total()).toBe(1);
    expect(requests.of('GET')).toBe(1);
  });

  test(`the claims it may have written unseen are remembered up to ${MAX_UNRESOLVED_CLAIMS} keys, the oldest forgotten first`, async () => {
    /** Lands `first` unseen, then fails `others` claims unseen; then claims `first` again. */
    async function rememberedAfter(others: number): Promise<string> {
      const { store, fault } = await faultyStore();
      const first = freshKey();
      let mode: 'land' | 'fail' | 'off' = 'land';
      fault({
        before: (request) => {
          if (mode === 'fail' || (mode === 'land' && request.method === 'GET')) throw reset(request);
        },
        after: (request) => {
          if (mode === 'land' && request.method === 'POST') throw reset(request);
        },
      });
      const fail = async (key: IdempotencyKey) => expect(((await failureOf(store.claim(key, digest))) as StoreUnavailableError).writeMayHaveLanded).toBe(true);
      await fail(first);
      mode = 'fail';
      for (let i = 0; i < others; i++) await fail(keyFromMessageId('payments', `other-${i}`));
      mode = 'off';
      return (await store.claim(first, digest)).kind;
    }
    expect(await rememberedAfter(MAX_UNRESOLVED_CLAIMS - 1)).toBe('reclaimed');
    expect(await rememberedAfter(MAX_UNRESOLVED_CLAIMS)).toBe('inProgress');
  });
});
