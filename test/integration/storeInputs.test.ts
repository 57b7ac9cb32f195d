import {
  CompletedKeyCache,
  ConfigurationError,
  IdempotencyError,
  InvalidKeyError,
  payloadDigest,
  TableIdempotencyStore,
  type ClaimOutcome,
  type IdempotencyKey,
  type TableIdempotencyStoreOptions,
} from 'azure-functions-idempotency/internal';
import { TableClient } from '@azure/data-tables';
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

describe('store entry points: results', () => {
  test.each([
    ['a function', () => 1, /holds a function/],
    ['a symbol', Symbol('s'), /holds a symbol/],
    ['a nested function (JSON would drop it)', { ok: true, next: () => 1 }, /holds a function at member "next"/],
    ['a symbol in an array (JSON would write null)', [Symbol('s')], /holds a symbol at member "0"/],
    ['a bigint', { amount: 10n }, /holds a bigint at member "amount"/],
  ])('complete and commit refuse %s as a result; the claim stays usable', async (_what, result, message) => {
    const store = await newStore();
    const key = { consumer: 'payments', key: 'k' };
    const claim = claimOf(await store.claim(key, digest));
    await expect(store.complete(claim, result)).rejects.toThrow(IdempotencyError);
    await expect(store.complete(claim, result)).rejects.toThrow(message);
    await expect(store.commit({ consumer: 'payments', key: 'other' }, digest, result)).rejects.toThrow(message);
    expect(await store.get({ consumer: 'payments', key: 'other' })).toBeUndefined();
    expect(await store.complete(claim, { ok: 1 })).toMatchObject({ result: { ok: 1 } });
  });

  test('undefined is still "no result"; a Date is stored as its ISO string (JSON)', async () => {
    const store = await newStore();
    const a = claimOf(await store.claim({ consumer: 'c', key: 'a' }, digest));
    expect((await store.complete(a, undefined)).result).toBeUndefined();
    const b = claimOf(await store.claim({ consumer: 'c', key: 'b' }, digest));
    expect((await store.complete(b, { at: new Date(0) })).result).toEqual({ at: '1970-01-01T00:00:00.000Z' });
  });
});

describe('store entry points: local rows', () => {
  const names = [
    'timestamp',
    'Timestamp',
    'TIMESTAMP',
    'etag',
    'ETag',
    'PartitionKey',
    'partitionKey',
    'partitionkey',
    'RowKey',
    'rowKey',
    'ROWKEY',
    'kind',
    'odata.etag',
    'odata.type',
    'Odata.anything',
    'amount@odata.type',
    'has space',
    '9lives',
    'a-b',
    'x'.repeat(256),
  ];
  const cases = names.map((name) => [name.length > 20 ? `${name.slice(0, 4)}... (${name.length} characters)` : JSON.stringify(name), name]);
  test.each(cases)('a local-row property named %s is refused with ConfigurationError, and nothing is written', async (_label, name) => {
    const store = await newStore();
    const key = { consumer: 'payments', key: 'k' };
    const effects = [{ name: 'payment', properties: { amount: 1, [name]: 'x' } }];
    await expect(store.claim(key, digest, { effects })).rejects.toThrow(ConfigurationError);
    await expect(store.commit(key, digest, 'r', effects)).rejects.toThrow(/local effect "payment"/);
    expect(await store.get(key)).toBeUndefined();
    const claim = claimOf(await store.claim(key, digest));
    await expect(store.complete(claim, 'r', effects)).rejects.toThrow(ConfigurationError);
    expect((await store.get(key))?.status).toBe('IN_PROGRESS');
  });

  test.each([
    ['undefined', undefined],
    ['an object', { nested: 1 }],
    ['a bigint', 1n],
    ['a function', () => 1],
  ])('a local-row value that is %s is refused, not dropped', async (_what, value) => {
    const store = await newStore();
    const effects = [{ name: 'payment', properties: { amount: value } as never }];
    await expect(store.commit({ consumer: 'payments', key: 'k' }, digest, 'r', effects)).rejects.toThrow(/a row holds strings, numbers, booleans or null/);
  });

  test('ordinary names (letters, digits, _) and null values still work', async () => {
    const store = await newStore();
    const outcome = await store.commit({ consumer: 'payments', key: 'k' }, digest, 'r', [
      { name: 'payment', properties: { amount: 1, _note: 'x', chargeId: null, Kind2: true } },
    ]);
    expect(outcome.kind).toBe('committed');
  });
});

describe('store options', () => {
  /** A client no request is sent through (options are checked in the constructor). */
  const unused = () => TableClient.fromConnectionString(azuriteOf().connectionString, 'unused', { allowInsecureConnection: true });
  const build = (options: Record<string, unknown>) => () => new TableIdempotencyStore(unused(), { retentionMs: DAY_MS, ...options });

  test.each([
    ['cacheSize', -1],
    ['cacheSize', 1.5],
    ['cacheSize', Number.NaN],
    ['cacheSize', 10_000_001],
    ['cacheSize', '10'],
    ['cacheable', 'yes'],
    ['leaseMs', 1e300],
    ['leaseMs', 86_400_001],
    ['leaseMs', 0],
    ['leaseMs', -5],
    ['leaseMs', 0.5],
    ['leaseMs', Number.POSITIVE_INFINITY],
    ['retentionMs', 1e300],
    ['retentionMs', 3651 * DAY_MS],
    ['retentionMs', 0],
    ['retentionMs', undefined],
    ['retentionMs', 1.5],
    ['maxResultBytes', 32 * 1024 + 1],
    ['maxResultBytes', 0.5],
    ['callTimeoutMs', 600_001],
    ['partitionCount', 0],
    ['clock', {}],
  ])('%s = %p is a ConfigurationError naming it, never a raw RangeError', (name, value) => {
    expect(build({ [name]: value })).toThrow(ConfigurationError);
    expect(build({ [name]: value })).toThrow(name === 'clock' ? /nowMs/ : name === 'partitionCount' ? /partition count/ : new RegExp(name));
  });

  test('options themselves missing are a ConfigurationError', () => {
    expect(() => new TableIdempotencyStore(unused(), undefined as unknown as TableIdempotencyStoreOptions)).toThrow(ConfigurationError);
  });

  test('bounds are inclusive: a one-day lease, 3,650 days of retention, a cache of 10 million, 0 (no cache)', () => {
    expect(build({ leaseMs: 86_400_000, retentionMs: 3650 * DAY_MS, cacheSize: 10_000_000 })).not.toThrow();
    expect(build({ cacheSize: 0 })).not.toThrow();
  });

  test('CompletedKeyCache refuses a bad size with ConfigurationError', () => {
    expect(() => new CompletedKeyCache(-1, new FakeClock())).toThrow(ConfigurationError);
  });

  test('per-claim and renewal leases have the same bounds; a refused lease writes nothing', async () => {
    const store = await newStore();
    const key = { consumer: 'payments', key: 'k' };
    for (const leaseMs of [1e300, 0, -1, 0.5, 86_400_001, Number.NaN]) {
      await expect(store.claim(key, digest, { leaseMs })).rejects.toThrow(ConfigurationError);
    }
    expect(await store.get(key)).toBeUndefined();
    const claim = claimOf(await store.claim(key, digest, { leaseMs: 86_400_000 }));
    await expect(store.renewLease(claim, 1e300)).rejects.toThrow(/leaseMs must be an integer from 1 to 86400000, got 1e\+300/);
    expect(await store.renewLease(claim, 1_000)).toMatchObject({ attempt: 1 });
  });
});
