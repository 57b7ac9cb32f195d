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
