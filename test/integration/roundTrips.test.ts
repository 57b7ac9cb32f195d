import type { TableClient } from '@azure/data-tables';
import {
  keyFromCloudEvent,
  keyFromMessageId,
  makeIdempotent,
  makeIdempotentBatch,
  payloadDigest,
  TableIdempotencyStore,
  type ClaimOutcome,
  type TableIdempotencyStoreOptions,
} from 'azure-functions-idempotency/internal';
import { COUNT_POLICY_NAME, RoundTripCounter } from '../../tools/bench/RoundTripCounter';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

// These are the core's documented costs (docs/DESIGN.md, "Round trips"): a regression in the
// store that adds a request fails here, and so does a counter that misses or double-counts.
const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();

async function counted(
  options: Partial<TableIdempotencyStoreOptions> = {},
): Promise<{ store: TableIdempotencyStore; client: TableClient; counter: RoundTripCounter }> {
  const client = await freshTable(azuriteOf());
  const counter = RoundTripCounter.attach(client);
  const store = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, clock: new FakeClock(), ...options });
  return { store, client, counter };
}

const key = keyFromMessageId('payments', 'pay-1');
const digest = payloadDigest({ paymentId: 'pay-1', amount: 100 });

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

describe('round trips per message, counted on the wire (Azurite)', () => {
  test('a fresh message (claim + complete) costs exactly 2 requests', async () => {
    const { store, counter } = await counted();
    const n = await counter.measure(async () => {
      const claim = claimOf(await store.claim(key, digest));
      await store.complete(claim, { ok: true });
    });
    expect(n).toBe(2);
  });

  test('a duplicate without the cache costs exactly 2 requests (failed insert + read)', async () => {
    const { store, counter } = await counted();
    await store.complete(claimOf(await store.claim(key, digest)), { ok: true });
    let outcome: ClaimOutcome | undefined;
    const n = await counter.measure(async () => (outcome = await store.claim(key, digest)));
    expect(outcome).toMatchObject({ kind: 'duplicate', cached: false });
    expect(n).toBe(2);
  });

  test('redelivery-aware: a completed duplicate redelivered (deliveryCount 2) costs 1 request through makeIdempotent; a fresh first delivery still 2', async () => {
    const { store, counter } = await counted();
    const handler = makeIdempotent(async (m: { n: number }, _c: { triggerMetadata: Record<string, unknown> }) => ({ ok: m.n }), {
      store,
      consumer: 'payments',
    });
    const deliver = (id: string, deliveryCount: number) => handler({ n: 1 }, { triggerMetadata: { messageId: id, deliveryCount } });
    expect(await counter.measure(() => deliver('m-1', 1))).toBe(2); // fresh: insert + complete
    expect(await counter.measure(() => deliver('m-1', 1))).toBe(2); // producer duplicate: failed insert + read
    expect(await counter.measure(() => deliver('m-1', 2))).toBe(1); // redelivery of a completed key: read
    expect(await counter.measure(() => deliver('m-2', 2))).toBe(3); // redelivery, key absent: read + insert + complete
    expect(await deliver('m-1', 3)).toEqual({ ok: 1 });
  });

  test('read-first on an in-progress record whose lease lapsed takes it over without the failing insert (read + replace)', async () => {
    const clock = new FakeClock();
    const { store, counter } = await counted({ clock, leaseMs: 1000 });
    claimOf(await store.claim(key, digest));
    clock.advance(1000);
    let outcome: ClaimOutcome | undefined;
    expect(await counter.measure(async () => (outcome = await store.claim(key, digest, { readFirst: true })))).toBe(2);
    expect(outcome).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
  });

  test('a duplicate answered from the completed-key cache costs 0 requests', async () => {
    const { store, counter } = await counted({ cacheSize: 100 });
    await store.complete(claimOf(await store.claim(key, digest)), { ok: true });
    let outcome: ClaimOutcome | undefined;
    const n = await counter.measure(async () => (outcome = await store.claim(key, digest)));
    expect(outcome).toMatchObject({ kind: 'duplicate', cached: true });
    expect(n).toBe(0);
  });

  test('commit with one local effect costs exactly 1 request (marker + effect in one transaction)', async () => {
    const { store, client, counter } = await counted();
    const n = await counter.measure(() => store.commit(key, digest, { ok: true }, [{ name: 'payment', properties: { amount: 100 } }]));
    expect(n).toBe(1);
    const { partitionKey, rowKey } = store.addressOf(key);
    await expect(client.getEntity(partitionKey, `${rowKey}~payment`)).resolves.toMatchObject({ amount: 100 });
  });

  test('counter: an SDK retry is counted as one more round trip', async () => {
    const { store, client, counter } = await counted();
    // Loses the answer of the first insert (the insert lands, the client sees a 503): the SDK
    // retries it (409), and the store reads the record and recognises its own claim.
    let lost = false;
    client.pipeline.addPolicy(
      {
        name: 'loseFirstInsertAnswer',
        sendRequest: async (request, next) => {
          const response = await next(request);
          if (!lost && request.method === 'POST') {
            lost = true;
            return { ...response, status: 503 };
          }
          return response;
        },
      },
      { afterPhase: 'Sign', afterPolicies: [COUNT_POLICY_NAME] },
    );
    let outcome: ClaimOutcome | undefined;
    const n = await counter.measure(async () => (outcome = await store.claim(key, digest)));
    expect(lost).toBe(true);
    expect(outcome?.kind).toBe('claimed');
    expect(n).toBe(3); // insert, retried insert (409), read
  });

  describe('batches (claimMany): one transaction per table partition, not one request per event', () => {
    const batch = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => keyFromMessageId('events', `${prefix}-${i}`));
    const partitionsOf = (store: TableIdempotencyStore, keys: ReturnType<typeof batch>) => new Set(keys.map((k) => store.addressOf(k).partitionKey)).size;

    test('64 fresh events cost one insert transaction per partition touched; one by one they cost 64', async () => {
      const { store, counter } = await counted();
      const keys = batch('fresh', 64);
      const partitions = partitionsOf(store, keys);
      let kinds: string[] = [];
      const n = await counter.measure(async () => (kinds = (await store.claimMany(keys.map((k) => ({ key: k, digest })))).map((o) => o.kind)));
      expect(kinds).toEqual(keys.map(() => 'claimed'));
      expect(n).toBe(partitions);
      const single = await counted();
      const m = await single.counter.measure(async () => {
        for (const k of batch('fresh', 64)) await single.store.claim(k, digest);
      });
      expect(m).toBe(64);
      console.log(`claimMany, 64 fresh events: ${n} round trips (${partitions} partitions) vs ${m} one by one`);
    });

    test('a replayed batch (every event completed) costs a failed transaction and one query per partition; one by one 128 (64 with read-first)', async () => {
      const { store, counter } = await counted();
      const keys = batch('replay', 64);
      for (const outcome of await store.claimMany(keys.map((k) => ({ key: k, digest })))) await store.complete(claimOf(outcome), { ok: 1 });
      const partitions = partitionsOf(store, keys);
      let kinds: string[] = [];
      const n = await counter.measure(async () => (kinds = (await store.claimMany(keys.map((k) => ({ key: k, digest })))).map((o) => o.kind)));
      expect(kinds).toEqual(keys.map(() => 'duplicate'));
      expect(n).toBe(2 * partitions);
      console.log(`claimMany, 64 replayed events: ${n} round trips (${partitions} partitions) vs 128 one by one`);
    });

    test('makeIdempotentBatch on 32 fresh events: the claims of one transaction per partition plus one completion each; the replay only the claims', async () => {
      const { store, counter } = await counted();
      const events = Array.from({ length: 32 }, (_, i) => ({ specversion: '1.0', source: '/rt', id: `e-${i}`, data: i }));
      const handler = makeIdempotentBatch(async (e: { data: number }) => e.data, { store, consumer: 'events', park: async () => undefined });
      const partitions = partitionsOf(
        store,
        events.map((e) => keyFromCloudEvent('events', e)),
      );
      const fresh = await counter.measure(() => handler(events));
      expect(fresh).toBe(partitions + 32);
      const replay = await counter.measure(() => handler(events));
      expect(replay).toBe(2 * partitions);
      console.log(
        `makeIdempotentBatch, 32 events: fresh ${fresh} round trips (${partitions} partitions + 32 completions) vs 64 one by one; replay ${replay} vs 64`,
      );
    });

    test('a half-replayed batch: failed transaction, query, and one insert transaction for the fresh half, per partition', async () => {
      const { store, counter } = await counted();
      const keys = batch('half', 64);
      const done = keys.filter((_, i) => i % 2 === 0);
      for (const outcome of await store.claimMany(done.map((k) => ({ key: k, digest })))) await store.complete(claimOf(outcome), { ok: 1 });
      let kinds: string[] = [];
      const n = await counter.measure(async () => (kinds = (await store.claimMany(keys.map((k) => ({ key: k, digest })))).map((o) => o.kind)));
      expect(kinds).toEqual(keys.map((_, i) => (i % 2 === 0 ? 'duplicate' : 'claimed')));
      const mixed = new Set(done.map((k) => store.addressOf(k).partitionKey));
      const partitions = partitionsOf(store, keys);
      const freshOnly = partitions - mixed.size; // partitions holding only fresh events: one transaction
      const freshInMixed = new Set(
        keys.filter((_, i) => i % 2 === 1 && mixed.has(store.addressOf(keys[i]).partitionKey)).map((k) => store.addressOf(k).partitionKey),
      ).size;
      expect(n).toBe(freshOnly + 2 * mixed.size + freshInMixed);
      console.log(`claimMany, 64 events half replayed: ${n} round trips vs 96 one by one (64 claims + 32 reads)`);
    });
  });
});
