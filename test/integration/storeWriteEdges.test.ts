import type { PipelineRequest } from '@azure/core-rest-pipeline';
import type { TableClient } from '@azure/data-tables';
import {
  keyFromMessageId,
  LeaseLostError,
  payloadDigest,
  StoreUnavailableError,
  TableIdempotencyStore,
  type ClaimOutcome,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * Edges of the Table store's writes on a real Azurite: a claim whose answer comes after the deadline
 * and lands after an empty read-back (issue 21, item 3), and the completion of a claim whose own
 * renewals keep moving its ETag (item 2).
 */
const azuriteOf = useAzurite();
const DEADLINE_MS = 300;
const digest = payloadDigest({ amount: 1 });
let n = 0;
const freshKey = () => keyFromMessageId('edges', `m-${++n}-${Date.now()}`);

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

/**
 * Holds the next request of `method` until `holdMs` after it was sent (past the store's deadline), then
 * sends it anyway, its abort signal detached: the request was in flight, and it lands late.
 * `landed` settles when the service has answered it.
 */
function lateLanding(client: TableClient, method: string, holdMs: number): { landed: Promise<number> } {
  let armed = true;
  let land: (status: number) => void = () => undefined;
  const landed = new Promise<number>((resolve) => (land = resolve));
  client.pipeline.addPolicy(
    {
      name: 'lateLanding',
      sendRequest: async (request: PipelineRequest, next) => {
        if (!armed || request.method !== method) return next(request);
        armed = false;
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        request.abortSignal = undefined;
        const response = await next(request);
        land(response.status);
        return response;
      },
    },
    { afterPhase: 'Retry' },
  );
  return { landed };
}

/** A store with a short call deadline (the late-write tests hold requests past it), or a generous one. */
async function storeWithClient(clock = new FakeClock(), callTimeoutMs = DEADLINE_MS) {
  const client = await freshTable(azuriteOf());
  const store = new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000, callTimeoutMs, clock });
  return { client, store, clock };
}

async function failureOf(call: Promise<unknown>): Promise<StoreUnavailableError> {
  const error = await call.then(
    () => new Error('expected a failure'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreUnavailableError);
  return error as StoreUnavailableError;
}

describe('a claim answered too late, read back empty, that lands afterwards', () => {
  test('insert: the error says the write may have landed; after it lands this store takes the key over at once, another process sees it in progress', async () => {
    const { client, store, clock } = await storeWithClient();
    const other = new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000, clock });
    const key = freshKey();
    const late = lateLanding(client, 'POST', DEADLINE_MS * 3);
    const error = await failureOf(store.claim(key, digest));
    expect(error.writeMayHaveLanded).toBe(true);
    expect(error.message).toMatch(/proves nothing about a request still in flight/);
    expect(await late.landed).toBe(204); // the insert reached the table after the claim had answered
    expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });
    // Another process cannot know the claim is orphaned: it waits for the lease, as for any claim.
    expect((await other.claim(key, digest)).kind).toBe('inProgress');
    // This store remembers the owner id of the claim it could not settle and takes it over at once.
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', previousStatus: 'IN_PROGRESS', previousAttempt: 1, claim: { attempt: 2 } });
  });

  test('takeover: the same, for a conditional replace of a released record', async () => {
    const { client, store } = await storeWithClient();
    const key = freshKey();
    await store.release(claimOf(await store.claim(key, digest)), 'Error: first attempt failed');
    const late = lateLanding(client, 'PUT', DEADLINE_MS * 3);
    const error = await failureOf(store.claim(key, digest));
    expect(error.writeMayHaveLanded).toBe(true);
    expect(await late.landed).toBe(204);
    expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2 });
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', previousAttempt: 2, claim: { attempt: 3 } });
  });

  test('commit: a commit answered too late and read back empty says it may have landed; once it lands the key is a duplicate', async () => {
    const { client, store } = await storeWithClient();
    const key = freshKey();
    const late = lateLanding(client, 'POST', DEADLINE_MS * 3);
    const error = await failureOf(store.commit(key, digest, { done: 1 }, [{ name: 'row', properties: { v: 1 } }]));
    expect(error.writeMayHaveLanded).toBe(true);
    expect(await late.landed).toBe(202); // the transaction (marker + row) reached the table
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'duplicate', record: { result: { done: 1 }, localRows: ['row'] } });
  });

  test('a takeover whose condition can no longer hold (another claimant wrote first) decided nothing, and says so', async () => {
    const { client, store, clock } = await storeWithClient();
    const rival = new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000, clock });
    const key = freshKey();
    await store.release(claimOf(await store.claim(key, digest)), 'Error: first attempt failed');
    let rivalClaimed: Promise<ClaimOutcome> | undefined;
    client.pipeline.addPolicy(
      {
        name: 'rivalFirst',
        sendRequest: async (request, next) => {
          if (request.method !== 'PUT' || rivalClaimed) return next(request);
          rivalClaimed = rival.claim(key, digest); // the rival takes the record over while ours hangs
          await rivalClaimed;
          await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS * 2));
          return next(request);
        },
      },
      { afterPhase: 'Retry' },
    );
    const error = await failureOf(store.claim(key, digest));
    expect((await rivalClaimed)?.kind).toBe('reclaimed');
    expect(error.writeMayHaveLanded).toBe(false);
    expect(error.message).toMatch(/can no longer land/);
  });
});

describe("a claim's own renewals never make its completion fail", () => {
  test('a completion whose ETag is moved by renewals of the same claim before each of its tries completes, however many times', async () => {
    // The renewals run inside the completion's requests: a generous deadline, so a loaded machine cannot fail it.
    const { client, store, clock } = await storeWithClient(new FakeClock(), 30_000);
    const renewer = new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000, clock, callTimeoutMs: 5_000 });
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    const ROUNDS = 6; // more than any fixed limit of retries a store might have had (it had 3)
    let renewals = 0;
    client.pipeline.addPolicy(
      {
        name: 'renewBeforeEachCompletion',
        sendRequest: async (request, next) => {
          const completing = typeof request.body === 'string' && request.body.includes('"COMPLETED"');
          if (completing && renewals < ROUNDS) {
            renewals++;
            clock.advance(10);
            await renewer.renewLease(claim); // the same claim, straight on the store (stale ETag: it moves it anyway)
          }
          return next(request);
        },
      },
      { afterPhase: 'Retry' },
    );
    const completed = await store.complete(claim, { done: true });
    expect(renewals).toBe(ROUNDS);
    expect(completed).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { done: true } });
    expect(await store.get(key)).toMatchObject({ status: 'COMPLETED', result: { done: true } });
  });

  test('a takeover still fails the completion of the claim it took over (LeaseLostError)', async () => {
    const { store, clock } = await storeWithClient(new FakeClock(), 30_000);
    const key = freshKey();
    const first = claimOf(await store.claim(key, digest));
    await store.renewLease(first);
    clock.advance(60_000);
    expect((await store.claim(key, digest)).kind).toBe('reclaimed');
    await expect(store.complete(first, 'late')).rejects.toBeInstanceOf(LeaseLostError);
  });

  test('a renewal of the same claim never shortens a lease another renewal of it extended further', async () => {
    const { store, clock } = await storeWithClient(new FakeClock(), 30_000);
    const key = freshKey();
    const claim = claimOf(await store.claim(key, digest));
    clock.advance(1_000);
    const longer = await store.renewLease(claim, 120_000);
    const shorter = await store.renewLease(claim, 1_000); // stale ETag, same claim, a lease ending sooner
    expect(shorter.leaseExpiresAtMs).toBe(longer.leaseExpiresAtMs);
    expect((await store.get(key))?.leaseExpiresAtMs).toBe(longer.leaseExpiresAtMs);
  });
});
