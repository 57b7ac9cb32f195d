import { CompletedKeyCache, ConfigurationError, RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency/internal';
import { reopenableByRetry } from '../../src/app/paymentRetry';
import { cacheableRecord } from '../../src/app/stores';
import { FakeClock } from '../support/tables';

// The completed-key cache's `cacheable` option (a consumer's results it may reopen are never cached) and the
// app's predicate for it (the payments operator's retry reopens a payment completed `failed`).

function record(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    recordId: 'record-1',
    consumer: 'payments',
    key: 'pay-1',
    status: RecordStatus.Completed,
    digest: 'a'.repeat(64),
    result: { status: 'succeeded' },
    attempt: 1,
    ownerId: 'owner-1',
    leaseExpiresAtMs: 0,
    retentionExpiresAtMs: Number.MAX_SAFE_INTEGER,
    createdAtMs: 100,
    updatedAtMs: 100,
    localRows: [],
    etag: 'W/"1"',
    ...overrides,
  };
}

const notFailed = (r: IdempotencyRecord) => (r.result as { status?: string }).status !== 'failed';

describe('CompletedKeyCache: the cacheable option', () => {
  test('default: every completed record is cached, never an in-progress or released one', () => {
    const cache = new CompletedKeyCache(10, new FakeClock());
    cache.put('a', record({ result: { status: 'failed' } }));
    cache.put('b', record({ status: RecordStatus.InProgress }));
    cache.put('c', record({ status: RecordStatus.Released }));
    expect(cache.get('a')).toMatchObject({ result: { status: 'failed' } });
    expect([cache.get('b'), cache.get('c'), cache.size]).toEqual([undefined, undefined, 1]);
  });

  test('a completed record the predicate rejects is not cached; one it accepts is', () => {
    const cache = new CompletedKeyCache(10, new FakeClock(), notFailed);
    cache.put('failed', record({ result: { status: 'failed' } }));
    cache.put('ok', record());
    expect(cache.get('failed')).toBeUndefined();
    expect(cache.get('ok')).toMatchObject({ result: { status: 'succeeded' } });
    expect(cache.size).toBe(1);
  });

  test("a rejected record drops the key's earlier entry: the key's newest word is not cacheable", () => {
    const cache = new CompletedKeyCache(10, new FakeClock(), notFailed);
    cache.put('k', record({ createdAtMs: 1 }));
    cache.put('k', record({ createdAtMs: 2, result: { status: 'failed' } }));
    expect(cache.get('k')).toBeUndefined();
  });

  test('a predicate that throws counts as false (never cached); one that mutates its argument changes nothing cached', () => {
    const throwing = new CompletedKeyCache(10, new FakeClock(), () => {
      throw new Error('boom');
    });
    throwing.put('k', record());
    expect(throwing.get('k')).toBeUndefined();
    const mutating = new CompletedKeyCache(10, new FakeClock(), (r) => {
      (r.result as { status: string }).status = 'changed';
      return true;
    });
    mutating.put('k', record());
    expect(mutating.get('k')).toMatchObject({ result: { status: 'succeeded' } });
  });

  test('only `true` accepts; a predicate that is not a function is a ConfigurationError', () => {
    const truthy = new CompletedKeyCache(10, new FakeClock(), (() => 1) as unknown as () => boolean);
    truthy.put('k', record());
    expect(truthy.get('k')).toBeUndefined();
    expect(() => new CompletedKeyCache(10, new FakeClock(), 'yes' as unknown as () => boolean)).toThrow(ConfigurationError);
  });
});

describe('CompletedKeyCache.forget: a record changed by an operator (reopened) is read from the store again', () => {
  test("drops the key's entry, keeps the others; a key never cached is fine", () => {
    const cache = new CompletedKeyCache(10, new FakeClock());
    cache.put('a', record());
    cache.put('b', record({ key: 'pay-2' }));
    cache.forget('a');
    cache.forget('absent');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toMatchObject({ key: 'pay-2' });
    expect(cache.size).toBe(1);
  });
});

describe("the app's predicate: a payment the operator's retry may reopen is never cached", () => {
  test.each([
    ['payments', { status: 'failed', reason: 'budget spent' }, true],
    ['payments', { status: 'succeeded', chargeId: 'ch_1' }, false],
    ['payments', { status: 'declined' }, false],
    ['payments', undefined, false],
    ['orders', { status: 'failed' }, false], // another consumer's result is never reopened by the payments retry
    ['http-payments', { status: 'failed' }, false],
  ])('%s with result %p: reopenable %p', (consumer, result, reopenable) => {
    const completed = record({ consumer, result });
    expect(reopenableByRetry(completed)).toBe(reopenable);
    expect(cacheableRecord(completed)).toBe(!reopenable);
  });

  test('a failed payment not yet completed (in progress, released) is not what the retry reopens', () => {
    expect(reopenableByRetry(record({ status: RecordStatus.Released, result: { status: 'failed' } }))).toBe(false);
  });
});

// The completed-key cache's bounds and order (CompletedKeyCache.ts), as a store sees them.
function completed(key: string, overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    recordId: `id-${key}`,
    consumer: 'payments',
    key,
    status: RecordStatus.Completed,
    digest: 'a'.repeat(64),
    result: { n: 1 },
    attempt: 1,
    ownerId: 'o',
    leaseExpiresAtMs: 0,
    retentionExpiresAtMs: 2_000,
    createdAtMs: 1,
    updatedAtMs: 1,
    localRows: [],
    etag: 'e',
    ...overrides,
  };
}

describe('the completed-key cache', () => {
  test('its size must be a positive integer, named in the error', () => {
    expect(new CompletedKeyCache(1, new FakeClock()).maxEntries).toBe(1);
    for (const size of [0, -1, 1.5, NaN]) {
      expect(() => new CompletedKeyCache(size, new FakeClock())).toThrow(new ConfigurationError(`cache size must be a positive integer, got ${size}`));
    }
    expect(() => new CompletedKeyCache(1, new FakeClock(), 'x' as never)).toThrow(new ConfigurationError('cacheable must be a function'));
  });

  test('bounded, least recently used out first: a read makes an entry the newest', () => {
    const cache = new CompletedKeyCache(2, new FakeClock(0));
    cache.put('a', completed('a'));
    cache.put('b', completed('b'));
    expect(cache.get('a')?.key).toBe('a'); // a is now the newest
    cache.put('c', completed('c'));
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.key).toBe('a');
    expect(cache.get('c')?.key).toBe('c');
  });

  test('a put of a key already held replaces it and makes it the newest', () => {
    const cache = new CompletedKeyCache(2, new FakeClock(0));
    cache.put('a', completed('a', { result: 1 }));
    cache.put('b', completed('b'));
    cache.put('a', completed('a', { result: 2 }));
    cache.put('c', completed('c'));
    expect(cache.get('a')?.result).toBe(2);
    expect(cache.get('b')).toBeUndefined();
  });

  test('an entry answers until its retention ends, not at it; then it is dropped', () => {
    const clock = new FakeClock(1_999);
    const cache = new CompletedKeyCache(5, clock);
    cache.put('a', completed('a'));
    expect(cache.get('a')?.key).toBe('a');
    clock.now = 2_000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
    clock.now = 0;
    expect(cache.get('a')).toBeUndefined();
  });

  test('answers are copies: changing one changes neither the cache nor the record put', () => {
    const cache = new CompletedKeyCache(5, new FakeClock(0));
    const original = completed('a', { result: { n: 1 } });
    cache.put('a', original);
    (original.result as { n: number }).n = 9;
    const first = cache.get('a')!;
    (first.result as { n: number }).n = 7;
    expect(cache.get('a')?.result).toEqual({ n: 1 });
  });
});
