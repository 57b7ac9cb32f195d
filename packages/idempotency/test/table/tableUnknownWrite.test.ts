import { RestError, type PipelineRequest, type PipelineResponse, type SendRequest } from '@azure/core-rest-pipeline';
import type { TableClient } from '@azure/data-tables';
import { keyFromMessageId, payloadDigest, StoreUnavailableError, TableIdempotencyStore, type IdempotencyKey } from 'azure-functions-idempotency/internal';
import { useAzurite } from '../../../../test/support/azurite';
import { claimOf, clientOn, countRequests, DAY_MS, failureOf, storeOn } from './tableFaults';

/**
 * A claim write whose answer never came, read back empty-handed, on Azurite (tableAcquire.ts, `resolveUnknownWrite`):
 * the request is held back while the caller is told its connection was reset, then delivered later, as a request still
 * in flight would be. While its condition can still hold (an insert: the key still absent; a takeover: the record still
 * at the ETag it was conditioned on) the claim may still land, and this store takes it over at once if it did; once
 * the condition cannot hold, nothing was decided.
 */
const azuriteOf = useAzurite();
const digest = payloadDigest({ paymentId: 'pay-u', amount: 3 });
let n = 0;
const freshKey = (): IdempotencyKey => keyFromMessageId('payments', `u-${++n}`);

/**
 * Holds back the first request of `client` with `method` (`POST`: an insert; `PUT`: a takeover): the caller gets a
 * connection reset (no status: it may have landed), `meanwhile` runs first; `deliver()` sends the held request later
 * and returns the service's status.
 */
function holdFirstWrite(client: TableClient, method: 'POST' | 'PUT', meanwhile: () => Promise<void> = async () => undefined) {
  let held: { request: PipelineRequest; next: SendRequest } | undefined;
  let armed = true;
  client.pipeline.addPolicy(
    {
      name: `hold-${Math.random()}`,
      sendRequest: async (request, next): Promise<PipelineResponse> => {
        if (!armed || request.method !== method) return next(request);
        armed = false;
        held = { request, next };
        await meanwhile();
        throw new RestError('socket hang up', { code: 'ECONNRESET', request });
      },
    },
    { phase: 'Serialize' },
  );
  return {
    deliver: async (): Promise<number> => {
      if (!held) throw new Error('no write was held');
      const { request, next } = held;
      return next(request).then(
        (response) => response.status,
        (error: RestError) => error.statusCode ?? 0,
      );
    },
  };
}

async function setUp() {
  const { store, client, clock } = await storeOn(azuriteOf());
  const other = new TableIdempotencyStore(clientOn(azuriteOf(), client.tableName), { retentionMs: 7 * DAY_MS, leaseMs: 60_000, clock });
  return { store, client, clock, other };
}

const MAY_STILL_LAND =
  /^table store did not answer the claim of "\d+:payments:u-\d+" in time \(.*\); the read-back found nothing of ours, which proves nothing about a request still in flight: this claim may still land, and then the key stays in progress until its lease lapses \(this process takes it over on its next claim\); retry later$/;
const CANNOT_LAND = /read back: this claim was not written and can no longer land, nothing was decided; retry later$/;

describe('a claim write without an answer, read back empty (Azurite)', () => {
  test('an insert while the key is still absent may still land: it lands later, and this store takes it over at once', async () => {
    const { store, client, other } = await setUp();
    const key = freshKey();
    const held = holdFirstWrite(client, 'POST');
    const error = (await failureOf(store.claim(key, digest))) as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.message).toMatch(MAY_STILL_LAND);
    expect(error).toMatchObject({ operation: 'claim', writeMayHaveLanded: true, retryable: true });
    expect((error.cause as RestError).code).toBe('ECONNRESET');
    expect(await held.deliver()).toBe(204);
    expect((await other.claim(key, digest)).kind).toBe('inProgress');
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
  });

  test('an insert whose key another claimant took meanwhile can no longer land: nothing decided, nothing remembered', async () => {
    const { store, client, other } = await setUp();
    const key = freshKey();
    const held = holdFirstWrite(client, 'POST', async () => void claimOf(await other.claim(key, digest)));
    const error = (await failureOf(store.claim(key, digest))) as StoreUnavailableError;
    expect(error.message).toMatch(CANNOT_LAND);
    expect(error.writeMayHaveLanded).toBe(false);
    expect(await held.deliver()).toBe(409);
    expect((await store.claim(key, digest)).kind).toBe('inProgress');
  });

  test('a takeover while the record keeps its ETag may still land: it lands later, and this store takes it over at once', async () => {
    const { store, client, clock, other } = await setUp();
    const key = freshKey();
    claimOf(await other.claim(key, digest));
    clock.advance(60_001);
    const held = holdFirstWrite(client, 'PUT');
    const error = (await failureOf(store.claim(key, digest))) as StoreUnavailableError;
    expect(error.message).toMatch(MAY_STILL_LAND);
    expect(error.writeMayHaveLanded).toBe(true);
    expect(await held.deliver()).toBe(204);
    expect((await other.claim(key, digest)).kind).toBe('inProgress');
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 3 } });
  });

  test('a takeover whose record changed meanwhile can no longer land: nothing decided', async () => {
    const { store, client, clock, other } = await setUp();
    const key = freshKey();
    const first = claimOf(await other.claim(key, digest));
    clock.advance(60_001);
    const held = holdFirstWrite(client, 'PUT', async () => void (await other.renewLease(first)));
    const error = (await failureOf(store.claim(key, digest))) as StoreUnavailableError;
    expect(error.message).toMatch(CANNOT_LAND);
    expect(error.writeMayHaveLanded).toBe(false);
    expect(await held.deliver()).toBe(412);
    expect((await store.claim(key, digest)).kind).toBe('inProgress');
  });
});

describe('keepLapsedInProgress, a refused takeover and the batch claims’ own unresolved keys (Azurite)', () => {
  test('a takeover the service refuses fails with the store’s error naming takeover; the record is left as it was', async () => {
    const { store, client, clock, other } = await setUp();
    const key = freshKey();
    const first = claimOf(await other.claim(key, digest));
    clock.advance(60_001);
    client.pipeline.addPolicy({
      name: 'refuse-takeover',
      sendRequest: async (request, next) => {
        if (request.method === 'PUT') throw new RestError('This request is not authorized', { statusCode: 403, code: 'AuthorizationFailure', request });
        return next(request);
      },
    });
    expect(await failureOf(store.claim(key, digest))).toMatchObject({ name: 'StoreRequestError', operation: 'takeover' });
    expect(await store.get(key)).toMatchObject({ ownerId: first.ownerId, attempt: 1 });
  });

  test('keepLapsedInProgress: an in-progress record past its retention is expired, taken over as usual', async () => {
    const { store, clock, other } = await setUp();
    const key = freshKey();
    claimOf(await other.claim(key, digest));
    clock.advance(8 * DAY_MS);
    expect(await store.claim(key, digest, { keepLapsedInProgress: true })).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
  });

  test('a batch with a key another process holds: decided from the re-read, no claim of it one by one', async () => {
    const { store, client, other } = await setUp();
    const [held, fresh] = [freshKey(), freshKey()];
    claimOf(await other.claim(held, digest));
    const requests = countRequests(client);
    const outcomes = await store.claimMany([held, fresh].map((key) => ({ key, digest })));
    expect(outcomes.map((o) => o.kind)).toEqual(['inProgress', 'claimed']);
    // The refused transaction (or the two inserts of two partitions), the re-read, the insert of the fresh key.
    expect(requests.of('GET')).toBe(1);
    expect(requests.total()).toBeLessThanOrEqual(3);
  });
});
