import {
  ConfigurationError,
  DEFAULT_STORE_TIMEOUT_MS,
  InvalidKeyError,
  MAX_STORE_TIMEOUT_MS,
  resolveStoreOptions,
  scopedKeyHash,
  StoreUnavailableError,
  systemClock,
  withDeadline,
} from 'azure-functions-idempotency/internal';
import { createHash } from 'node:crypto';
import { FakeClock } from '../support/tables';

// What every store resolves from its options, the deadline it puts on each call, and the record id it derives from a
// key (the core's protocol: storeOptions.ts, deadline.ts, recordId.ts, clock.ts), as a caller or an operator sees them.

const DAY_MS = 86_400_000;

describe('store options: the defaults and bounds every store shares', () => {
  test('defaults: a 5-minute lease, a 32 KiB result, no cache, a 5 s call deadline, the system clock', () => {
    expect(resolveStoreOptions({ retentionMs: DAY_MS }, 'S options')).toEqual({
      leaseMs: 300_000,
      retentionMs: DAY_MS,
      maxResultBytes: 32_768,
      cacheSize: 0,
      cacheable: undefined,
      callTimeoutMs: 5_000,
      clock: systemClock,
    });
    expect(DEFAULT_STORE_TIMEOUT_MS).toBe(5_000);
  });

  test('given values are kept', () => {
    const clock = new FakeClock();
    const cacheable = () => true;
    expect(
      resolveStoreOptions({ retentionMs: 1, leaseMs: 1, maxResultBytes: 1, cacheSize: 10_000_000, cacheable, callTimeoutMs: MAX_STORE_TIMEOUT_MS, clock }, 'S'),
    ).toEqual({ leaseMs: 1, retentionMs: 1, maxResultBytes: 1, cacheSize: 10_000_000, cacheable, callTimeoutMs: 600_000, clock });
  });

  test('the options object is required, named in the error', () => {
    expect(() => resolveStoreOptions(null as never, 'TableIdempotencyStore options')).toThrow(
      new ConfigurationError('TableIdempotencyStore options must be an object, got null'),
    );
  });

  test.each([
    ['no retention', { retentionMs: undefined }, 'retentionMs must be an integer from 1 to 315360000000, got undefined'],
    ['retention past 3,650 days', { retentionMs: 3650 * DAY_MS + 1 }, 'retentionMs must be an integer from 1 to 315360000000, got 315360000001'],
    ['a lease of 0', { leaseMs: 0 }, 'leaseMs must be an integer from 1 to 86400000, got 0'],
    ['a result bound of 0', { maxResultBytes: 0 }, 'maxResultBytes must be an integer from 1 to 9007199254740991, got 0'],
    [
      'a result bound over 32 KiB',
      { maxResultBytes: 32_769 },
      'maxResultBytes 32769 is above the limit every store keeps, 32768 (one Table string property: a result must fit every store)',
    ],
    ['a call deadline of 0', { callTimeoutMs: 0 }, 'callTimeoutMs must be an integer from 1 to 600000, got 0'],
    ['a call deadline over 10 minutes', { callTimeoutMs: 600_001 }, 'callTimeoutMs must be an integer from 1 to 600000, got 600001'],
    ['a clock without nowMs', { clock: {} }, 'clock must have a nowMs() method'],
    ['a clock whose nowMs is not a function', { clock: { nowMs: 5 } }, 'clock must have a nowMs() method'],
    ['a negative cache', { cacheSize: -1 }, 'cacheSize must be an integer from 0 to 10000000, got -1'],
    ['a cache over ten million', { cacheSize: 10_000_001 }, 'cacheSize must be an integer from 0 to 10000000, got 10000001'],
    ['a cacheable that is not a function', { cacheable: true }, 'cacheable must be a function'],
  ])('refused: %s', (_what, options, message) => {
    expect(() => resolveStoreOptions({ retentionMs: DAY_MS, ...options } as never, 'S')).toThrow(new ConfigurationError(message));
  });
});

describe('store calls: the deadline', () => {
  test('an answer before the deadline is returned, with a live abort signal', async () => {
    let signal: AbortSignal | undefined;
    await expect(
      withDeadline(1_000, 'claim', 'write', async (abortSignal) => {
        signal = abortSignal;
        return 'answer';
      }),
    ).resolves.toBe('answer');
    expect(signal?.aborted).toBe(false);
  });

  test('a failure before the deadline passes through as it is', async () => {
    const failure = new Error('412 from the store');
    await expect(withDeadline(1_000, 'complete', 'write', () => Promise.reject(failure))).rejects.toBe(failure);
  });

  test("a read without an answer: StoreUnavailableError (retryable, nothing decided), the table store's name by default", async () => {
    const error = await withDeadline(20, 'get', 'read', () => new Promise<never>(() => undefined)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({
      message: 'table store did not answer get within 20 ms; it was a read: nothing was decided; retry later',
      operation: 'get',
      writeMayHaveLanded: false,
      retryable: true,
    });
  });

  test('a write without an answer may have landed; the store is named as given; the SDK call is aborted with the same error', async () => {
    let signal: AbortSignal | undefined;
    const error = await withDeadline(
      20,
      'claim',
      'write',
      (abortSignal) => {
        signal = abortSignal;
        return new Promise<never>(() => undefined);
      },
      'cosmos store',
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({
      message:
        'cosmos store did not answer claim within 20 ms; it was a write: it may have landed (a key may stay claimed until its lease lapses); a retry finds out; retry later',
      operation: 'claim',
      writeMayHaveLanded: true,
    });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
  });

  test("an SDK that answers the abort with its own AbortError is reported as the deadline, not as the SDK's error", async () => {
    const error = await withDeadline(20, 'renew', 'write', (abortSignal) => {
      return new Promise<never>((_, reject) => abortSignal.addEventListener('abort', () => reject(new Error('AbortError: the operation was aborted'))));
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toBe(
      'table store did not answer renew within 20 ms; it was a write: it may have landed (a key may stay claimed until its lease lapses); a retry finds out; retry later',
    );
  });

  test('the deadline is cleared once the call answers: no timer is left behind', async () => {
    jest.useFakeTimers();
    try {
      await expect(withDeadline(60_000, 'get', 'read', async () => 1)).resolves.toBe(1);
      expect(jest.getTimerCount()).toBe(0);
      await expect(withDeadline(60_000, 'get', 'read', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  test('the deadline is the one given: an answer just inside it wins, one just past it does not', async () => {
    jest.useFakeTimers();
    try {
      const inside = withDeadline(100, 'get', 'read', () => new Promise((resolve) => setTimeout(() => resolve('in time'), 99)));
      jest.advanceTimersByTime(99);
      await expect(inside).resolves.toBe('in time');
      const late = withDeadline(100, 'get', 'read', () => new Promise((resolve) => setTimeout(() => resolve('late'), 101)));
      const settled = late.catch((e: unknown) => e);
      jest.advanceTimersByTime(101);
      expect(await settled).toBeInstanceOf(StoreUnavailableError);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('record ids and the clock', () => {
  test("a key's record id is the SHA-256 hex of its scoped key; an invalid key is refused", () => {
    expect(scopedKeyHash({ consumer: 'payments', key: 'pay-1' })).toBe(createHash('sha256').update('8:payments:pay-1', 'utf8').digest('hex'));
    expect(scopedKeyHash({ consumer: 'payments', key: 'pay-€' })).toBe(createHash('sha256').update(Buffer.from('8:payments:pay-€', 'utf8')).digest('hex'));
    expect(() => scopedKeyHash({ consumer: 'payments', key: '' })).toThrow(InvalidKeyError);
  });

  test('the system clock is the wall clock in epoch ms', () => {
    const before = Date.now();
    const now = systemClock.nowMs();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
