import { InvalidKeyError, payloadDigest, TableIdempotencyStore, type ClaimOutcome, type IdempotencyKey, type TableIdempotencyStoreOptions } from '../../src/core';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/** What the store accepts at its entry points (keys, results, local rows, options), on Azurite. */

const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();
const digest = payloadDigest({ n: 1 });

async function newStore(options: Partial<TableIdempotencyStoreOptions> = {}): Promise<TableIdempotencyStore> {
  return new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: 7 * DAY_MS, leaseMs: 60_000, clock: new FakeClock(), ...options });
}

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

const asKey = (value: unknown): IdempotencyKey => value as IdempotencyKey;

describe('store entry points: keys', () => {
  test.each([
    ['an undefined key (would collide with "undefined")', { consumer: 'payments', key: undefined }],
    ['a null key', { consumer: 'payments', key: null }],
    ['an empty key', { consumer: 'payments', key: '' }],
    ['a blank key', { consumer: 'payments', key: '   ' }],
    ['a numeric key', { consumer: 'payments', key: 42 }],
    ['an empty consumer', { consumer: '', key: 'k' }],
    ['a consumer with a trailing space (a second scope)', { consumer: 'payments ', key: 'k' }],
    ['a consumer with a leading space', { consumer: ' payments', key: 'k' }],
    ['a 1 MiB key (was a raw 400)', { consumer: 'payments', key: 'k'.repeat(1 << 20) }],
    ['a lone high surrogate', { consumer: 'payments', key: 'k\uD800' }],
    ['a lone low surrogate', { consumer: 'payments', key: 'k\uDC00' }],
    ['no key object at all', undefined],
  ])('claim, commit and get refuse %s with InvalidKeyError before any request', async (_what, key) => {
    const store = await newStore();
    await expect(store.claim(asKey(key), digest)).rejects.toThrow(InvalidKeyError);
    await expect(store.commit(asKey(key), digest, 'r')).rejects.toThrow(InvalidKeyError);
    await expect(store.get(asKey(key))).rejects.toThrow(InvalidKeyError);
  });

  test('keys: "undefined", U+FFFD and surrogate pairs are ordinary keys, each its own record', async () => {
    const store = await newStore();
    const keys = ['undefined', 'k\uFFFD', 'k\u{1F4B3}', 'k\u{1F4B4}'].map((key) => ({ consumer: 'payments', key }));
    for (const key of keys) expect((await store.claim(key, digest)).kind).toBe('claimed');
    for (const key of keys) expect(await store.get(key)).toMatchObject({ key: key.key, consumer: 'payments' });
  });

  test('complete, release and renewLease refuse a claim whose key was altered', async () => {
    const store = await newStore();
    const claim = claimOf(await store.claim({ consumer: 'payments', key: 'k' }, digest));
    const altered = { ...claim, key: asKey({ consumer: 'payments', key: undefined }) };
    await expect(store.complete(altered, 'r')).rejects.toThrow(InvalidKeyError);
    await expect(store.release(altered, 'why')).rejects.toThrow(InvalidKeyError);
    await expect(store.renewLease(altered)).rejects.toThrow(InvalidKeyError);
  });
});
