import {
  ConfigurationError,
  IdempotencyError,
  InvalidKeyError,
  LeaseLostError,
  ResultTooLargeError,
  keyFromMessageId,
  payloadDigest,
  type ClaimOutcome,
  type IdempotencyKey,
  type IdempotencyStore,
} from 'azure-functions-idempotency';
import { FakeClock } from '../../../../test/support/tables';

/** Options every store of the contract is built with. */
export const CONTRACT_OPTIONS = { leaseMs: 60_000, retentionMs: 86_400_000, maxResultBytes: 1000 } as const;

/** A store under test, and how to look at a key's local rows in its backing (name -> the row's own properties). */
export interface StoreUnderTest {
  readonly store: IdempotencyStore;
  readonly localRowsOf: (key: IdempotencyKey) => Promise<Map<string, Record<string, unknown>>>;
}

/** Builds a store on a fresh, empty backing (a new table, a new map) with {@link CONTRACT_OPTIONS} and `clock`. */
export type StoreFactory = (clock: FakeClock) => Promise<StoreUnderTest>;

const digestA = payloadDigest({ amount: 1 });
const digestB = payloadDigest({ amount: 2 });
let n = 0;
const freshKey = () => keyFromMessageId('contract', `msg-${++n}-${Date.now()}`);

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

/**
 * The behaviour every `IdempotencyStore` implementation must have: one set of tests, run against each
 * store (`storeContract.*.test.ts`). Same outcomes, same errors, same record ids, the clock injected.
 */
export function describeStoreContract(name: string, makeStore: StoreFactory): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    let clock: FakeClock;
    let store: IdempotencyStore;
    let localRowsOf: StoreUnderTest['localRowsOf'];
    beforeEach(async () => {
      clock = new FakeClock();
      ({ store, localRowsOf } = await makeStore(clock));
    });

    test('a fresh key is claimed with attempt 1; a second claim is in progress; another payload is key reuse', async () => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA));
      expect(claim).toMatchObject({ key, digest: digestA, attempt: 1, leaseExpiresAtMs: clock.now + CONTRACT_OPTIONS.leaseMs, createdAtMs: clock.now });
      expect((await store.claim(key, digestA)).kind).toBe('inProgress');
      expect((await store.claim(key, digestB)).kind).toBe('keyReused');
    });

    test('a completed key answers duplicates with the stored result, as JSON gives it back; another payload is key reuse', async () => {
      const key = freshKey();
      await store.complete(claimOf(await store.claim(key, digestA)), { chargeId: 'ch-1', at: new Date(0) });
      const again = await store.claim(key, digestA);
      expect(again).toMatchObject({ kind: 'duplicate', record: { status: 'COMPLETED', result: { chargeId: 'ch-1', at: '1970-01-01T00:00:00.000Z' } } });
      expect((await store.claim(key, digestB)).kind).toBe('keyReused');
      expect((await store.claim(key, digestA, { readFirst: true })).kind).toBe('duplicate');
    });

    test('two concurrent claims of one key yield exactly one winner', async () => {
      const key = freshKey();
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => store.claim(key, digestA)));
      expect(outcomes.filter((o) => o.kind === 'claimed')).toHaveLength(1);
      expect(outcomes.filter((o) => o.kind === 'inProgress')).toHaveLength(7);
    });

    test('a lapsed lease is taken over with attempt 2; the first claimant can no longer complete (LeaseLostError)', async () => {
      const key = freshKey();
      const first = claimOf(await store.claim(key, digestA));
      clock.advance(CONTRACT_OPTIONS.leaseMs); // the lease ends at leaseExpiresAtMs, exclusive
      const second = await store.claim(key, digestA);
      expect(second).toMatchObject({
        kind: 'reclaimed',
        previousStatus: 'IN_PROGRESS',
        previousAttempt: 1,
        claim: { attempt: 2, createdAtMs: first.createdAtMs },
      });
      await expect(store.complete(first, 'stale')).rejects.toBeInstanceOf(LeaseLostError);
      await expect(store.release(first, 'stale')).rejects.toBeInstanceOf(LeaseLostError);
      await expect(store.renewLease(first)).rejects.toBeInstanceOf(LeaseLostError);
      await store.complete(claimOf(second), 'fresh');
      expect((await store.get(key))?.result).toBe('fresh');
    });

    test('keepLapsedInProgress: a lapsed in-progress record is answered inProgress (nothing written); a released one is still taken over', async () => {
      const key = freshKey();
      const first = claimOf(await store.claim(key, digestA));
      clock.advance(CONTRACT_OPTIONS.leaseMs);
      expect(await store.claim(key, digestA, { keepLapsedInProgress: true })).toMatchObject({ kind: 'inProgress', record: { attempt: 1, etag: first.etag } });
      expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 1, etag: first.etag });
      expect(await store.claim(key, digestA)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
      const other = freshKey();
      await store.release(claimOf(await store.claim(other, digestA)), 'gave up');
      expect(await store.claim(other, digestA, { keepLapsedInProgress: true })).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
    });

    test('a released key is taken over at once by the next claim (attempt 2), with the reason kept', async () => {
      const key = freshKey();
      await store.release(claimOf(await store.claim(key, digestA)), 'Error: provider down');
      expect(await store.get(key)).toMatchObject({ status: 'RELEASED', lastError: 'Error: provider down', leaseExpiresAtMs: 0 });
      expect(await store.claim(key, digestA)).toMatchObject({ kind: 'reclaimed', previousStatus: 'RELEASED', claim: { attempt: 2 } });
    });

    test('a renewal extends the lease; a renewal by the same claim with an older ETag does not break its completion', async () => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA));
      clock.advance(50_000);
      const renewed = await store.renewLease(claim);
      expect(renewed.leaseExpiresAtMs).toBe(clock.now + CONTRACT_OPTIONS.leaseMs);
      clock.advance(50_000); // past the first lease, within the renewed one
      expect((await store.claim(key, digestA)).kind).toBe('inProgress');
      await store.renewLease(claim); // the original claim object: its ETag is stale, the claim is still ours
      await store.complete(claim, 'done');
      expect(await store.get(key)).toMatchObject({ status: 'COMPLETED', result: 'done', attempt: 1 });
    });

    test('an exact completion lands only on the version its claim names: a renewal since refuses it; its own write again resolves', async () => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA));
      const read = (await store.get(key))!;
      await store.renewLease({ ...claim, etag: read.etag }, 120_000); // another execution announces its call
      await expect(store.complete({ ...claim, etag: read.etag }, 'failed', [], { exact: true })).rejects.toBeInstanceOf(LeaseLostError);
      expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });

      const current = (await store.get(key))!;
      const exact = { ...claim, etag: current.etag, leaseExpiresAtMs: current.leaseExpiresAtMs };
      expect(await store.complete(exact, 'failed', [], { exact: true })).toMatchObject({ status: 'COMPLETED', result: 'failed' });
      // The same write again (its answer lost): done, not refused; another result is refused.
      expect(await store.complete(exact, 'failed', [], { exact: true })).toMatchObject({ status: 'COMPLETED', result: 'failed' });
      await expect(store.complete(exact, 'other', [], { exact: true })).rejects.toBeInstanceOf(LeaseLostError);
      // A plain completion of the same claim after a renewal is written through (the default, unchanged).
      const plain = freshKey();
      const held = claimOf(await store.claim(plain, digestA));
      await store.renewLease(held, 120_000);
      expect(await store.complete(held, 'done')).toMatchObject({ status: 'COMPLETED', result: 'done' });
    });
    test('a record past retention counts as absent: the next claim starts a new generation', async () => {
      const key = freshKey();
      await store.complete(claimOf(await store.claim(key, digestA)), 'old');
      clock.advance(CONTRACT_OPTIONS.retentionMs);
      const next = claimOf(await store.claim(key, digestB));
      expect(next.createdAtMs).toBe(clock.now);
    });

    test('commit records a completed key in one step; a later claim is a duplicate', async () => {
      const key = freshKey();
      expect(await store.commit(key, digestA, { ok: 1 }, [{ name: 'order', properties: { amount: 3 } }])).toMatchObject({
        kind: 'committed',
        takeover: false,
        record: { status: 'COMPLETED', result: { ok: 1 }, localRows: ['order'] },
      });
      expect(await store.claim(key, digestA)).toMatchObject({ kind: 'duplicate', record: { result: { ok: 1 } } });
    });

    test('the record id is opaque and the same for every claim of a key; absent keys read as undefined', async () => {
      const key = freshKey();
      const first = claimOf(await store.claim(key, digestA));
      clock.advance(CONTRACT_OPTIONS.leaseMs);
      const second = claimOf(await store.claim(key, digestA));
      expect(second.recordId).toBe(first.recordId);
      expect(first.recordId).toMatch(/^[0-9a-f]{64}$/);
      expect(await store.get(freshKey())).toBeUndefined();
    });

    test('refuses bad keys before any write: surrounding spaces in the consumer, an empty key, a lone surrogate', async () => {
      await expect(store.claim({ consumer: ' payments', key: 'k' }, digestA)).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(store.claim({ consumer: 'payments', key: '  ' }, digestA)).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(store.claim({ consumer: 'payments', key: 'a\uD800' }, digestA)).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(store.get({ consumer: '', key: 'k' })).rejects.toBeInstanceOf(InvalidKeyError);
    });

    test('refuses results it cannot keep: too large (ResultTooLargeError), a function (IdempotencyError); the claim stays usable', async () => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA));
      await expect(store.complete(claim, 'x'.repeat(CONTRACT_OPTIONS.maxResultBytes + 1))).rejects.toBeInstanceOf(ResultTooLargeError);
      await expect(store.complete(claim, { f: () => 1 })).rejects.toBeInstanceOf(IdempotencyError);
      await store.complete(claim, 'small');
      expect((await store.get(key))?.result).toBe('small');
    });

    test('refuses bad options and local rows with ConfigurationError: a lease of 0, a reserved property name', async () => {
      await expect(store.claim(freshKey(), digestA, { leaseMs: 0 })).rejects.toBeInstanceOf(ConfigurationError);
      await expect(store.claim(freshKey(), digestA, { effects: [{ name: 'row', properties: { RowKey: 'x' } }] })).rejects.toBeInstanceOf(ConfigurationError);
    });

    test('read-first claims decide the same as plain ones: absent -> claimed, in progress, lapsed -> reclaimed', async () => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA, { readFirst: true }));
      expect(claim.attempt).toBe(1);
      expect((await store.claim(key, digestA, { readFirst: true })).kind).toBe('inProgress');
      expect((await store.claim(key, digestB, { readFirst: true })).kind).toBe('keyReused');
      clock.advance(CONTRACT_OPTIONS.leaseMs);
      expect(await store.claim(key, digestA, { readFirst: true })).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } });
    });

    test('a second release, or a second completion with the same result and rows, by the same claim resolves; other contents are refused', async () => {
      const released = freshKey();
      const first = claimOf(await store.claim(released, digestA));
      await store.release(first, 'Error: once');
      await store.release(first, 'Error: twice'); // the same claim: its release is already on record
      expect(await store.get(released)).toMatchObject({ status: 'RELEASED', attempt: 1 });

      const completed = freshKey();
      const claim = claimOf(await store.claim(completed, digestA));
      const rows = [{ name: 'row', properties: { v: 1 } }];
      await store.complete(claim, { ok: 1 }, rows);
      expect(await store.complete(claim, { ok: 1 }, rows)).toMatchObject({ status: 'COMPLETED', result: { ok: 1 }, localRows: ['row'] });
      await expect(store.complete(claim, { ok: 2 }, rows)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(store.release(claim, 'late')).rejects.toBeInstanceOf(LeaseLostError);
      expect((await store.get(completed))?.result).toEqual({ ok: 1 });
    });

    test('a second completion with other local rows is refused (LeaseLostError), never reported done with its rows missing', async () => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA));
      await store.complete(claim, 'done', [{ name: 'a', properties: { v: 1 } }]);
      await expect(store.complete(claim, 'done', [{ name: 'b', properties: { v: 2 } }])).rejects.toBeInstanceOf(LeaseLostError);
      await expect(store.complete(claim, 'done', [{ name: 'a', properties: { v: 9 } }])).rejects.toBeInstanceOf(LeaseLostError);
      expect(await localRowsOf(key)).toEqual(new Map([['a', { v: 1 }]]));
    });

    test('null properties of local rows are left out of the row, by every store', async () => {
      const key = freshKey();
      await store.commit(key, digestA, 'ok', [{ name: 'row', properties: { v: 1, gone: null, s: 'x' } }]);
      expect(await localRowsOf(key)).toEqual(new Map([['row', { v: 1, s: 'x' }]]));
    });

    test('inputs are checked before a completed key answers: a bad result, rows or lease is refused, not answered duplicate', async () => {
      const key = freshKey();
      expect((await store.commit(key, digestA, 'first')).kind).toBe('committed');
      expect((await store.claim(key, digestA)).kind).toBe('duplicate'); // completed (and cached, where there is a cache)
      await expect(store.commit(key, digestA, () => 1)).rejects.toBeInstanceOf(IdempotencyError);
      await expect(store.commit(key, digestB, 'x'.repeat(CONTRACT_OPTIONS.maxResultBytes + 1))).rejects.toBeInstanceOf(ResultTooLargeError);
      await expect(store.commit(key, digestA, 'ok', [{ name: 'bad name', properties: {} }])).rejects.toBeInstanceOf(ConfigurationError);
      await expect(store.claim(key, digestA, { leaseMs: 0 })).rejects.toBeInstanceOf(ConfigurationError);
      await expect(store.claim(key, digestA, { effects: [{ name: 'r', properties: { RowKey: 'x' } }] })).rejects.toBeInstanceOf(ConfigurationError);
      expect((await store.claim(key, digestA)).kind).toBe('duplicate');
    });

    test('replays are independent copies: changing a replayed result, a returned record or a read changes nothing stored', async () => {
      const key = freshKey();
      const completed = await store.complete(claimOf(await store.claim(key, digestA)), { nested: { n: 1 }, list: [1] });
      (completed.result as { nested: { n: number } }).nested.n = 2;
      const first = await store.claim(key, digestA);
      if (first.kind !== 'duplicate') throw new Error(`expected a duplicate, got ${first.kind}`);
      (first.record.result as { nested: { n: number }; list: number[] }).nested.n = 3;
      (first.record.result as { list: number[] }).list.push(9);
      ((await store.get(key))!.localRows as string[]).length = 0;
      ((await store.get(key))!.result as { nested: { n: number } }).nested.n = 4;
      const again = await store.claim(key, digestA);
      expect(again).toMatchObject({ kind: 'duplicate', record: { result: { nested: { n: 1 }, list: [1] } } });
      const committedKey = freshKey();
      const committed = await store.commit(committedKey, digestA, { n: 1 });
      if (committed.kind !== 'committed') throw new Error(`expected committed, got ${committed.kind}`);
      (committed.record.result as { n: number }).n = 2;
      expect(await store.claim(committedKey, digestA)).toMatchObject({ kind: 'duplicate', record: { result: { n: 1 } } });
    });

    test.each([
      ['NaN', NaN],
      ['Infinity', { total: Infinity }],
      ['-Infinity', [-Infinity]],
      ['a Map', { m: new Map([['a', 1]]) }],
      ['a Set', new Set([1])],
      ['an undefined array element', [1, undefined]],
      ['a typed array', { bytes: new Uint8Array([1]) }],
      [
        'a class instance',
        {
          at: new (class Point {
            x = 1;
          })(),
        },
      ],
    ])('results JSON would change without a word are refused (IdempotencyError) and nothing is written: %s', async (_what, result) => {
      const key = freshKey();
      const claim = claimOf(await store.claim(key, digestA));
      await expect(store.complete(claim, result)).rejects.toBeInstanceOf(IdempotencyError);
      expect(await store.get(key)).toMatchObject({ status: 'IN_PROGRESS' });
      const other = freshKey();
      await expect(store.commit(other, digestA, result)).rejects.toBeInstanceOf(IdempotencyError);
      expect(await store.get(other)).toBeUndefined();
    });

    test('claimMany decides every key as claim would, in order: fresh, duplicate, key reused, in progress, lapsed, released', async () => {
      const [done, reused, held, lapsed, released] = [freshKey(), freshKey(), freshKey(), freshKey(), freshKey()];
      await store.complete(claimOf(await store.claim(done, digestA)), { n: 1 });
      await store.complete(claimOf(await store.claim(reused, digestA)), { n: 2 });
      claimOf(await store.claim(lapsed, digestA));
      clock.advance(CONTRACT_OPTIONS.leaseMs);
      claimOf(await store.claim(held, digestA));
      await store.release(claimOf(await store.claim(released, digestA)), 'Error: x');
      const fresh = [freshKey(), freshKey(), freshKey()];
      const requests = [fresh[0], done, reused, held, lapsed, released, fresh[1], fresh[2]].map((key) => ({ key, digest: key === reused ? digestB : digestA }));
      const outcomes = await store.claimMany!(requests);
      expect(outcomes.map((o) => o.kind)).toEqual(['claimed', 'duplicate', 'keyReused', 'inProgress', 'reclaimed', 'reclaimed', 'claimed', 'claimed']);
      expect(outcomes[1]).toMatchObject({ record: { result: { n: 1 } } });
      expect(outcomes[4]).toMatchObject({ claim: { attempt: 2 }, previousStatus: 'IN_PROGRESS' });
      const claim = claimOf(outcomes[0]);
      expect(claim).toMatchObject({ key: fresh[0], attempt: 1, leaseExpiresAtMs: clock.now + CONTRACT_OPTIONS.leaseMs });
      await store.complete(claim, 'ok');
      expect((await store.claim(fresh[0], digestA)).kind).toBe('duplicate');
      expect((await store.claim(fresh[1], digestA)).kind).toBe('inProgress');
      await expect(
        store.claimMany!([
          { key: done, digest: digestA },
          { key: done, digest: digestA },
        ]),
      ).rejects.toBeInstanceOf(ConfigurationError);
      await expect(store.claimMany!([{ key: freshKey(), digest: digestA }], { leaseMs: 0 })).rejects.toBeInstanceOf(ConfigurationError);
    });
  });
}
