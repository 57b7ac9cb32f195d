import {
  ConfigurationError,
  IdempotencyError,
  InvalidKeyError,
  LeaseLostError,
  ResultTooLargeError,
  keyFromMessageId,
  payloadDigest,
  type ClaimOutcome,
  type IdempotencyStore,
} from '../../src/core/public';
import { FakeClock } from '../support/tables';

/** Options every store of the contract is built with. */
export const CONTRACT_OPTIONS = { leaseMs: 60_000, retentionMs: 86_400_000, maxResultBytes: 1000 } as const;

/** Builds a store on a fresh, empty backing (a new table, a new map) with {@link CONTRACT_OPTIONS} and `clock`. */
export type StoreFactory = (clock: FakeClock) => Promise<IdempotencyStore>;

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
    beforeEach(async () => {
      clock = new FakeClock();
      store = await makeStore(clock);
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
  });
}
