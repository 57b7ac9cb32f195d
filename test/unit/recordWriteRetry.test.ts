import { LeaseLostError, StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency';
import {
  CALL_WRITE_RETRY_DELAYS_MS,
  RecordWriteBudgetError,
  retryDelayMs,
  writeRecordWithin,
  writeWhileCallLeased,
  type RetryBudget,
} from '../../src/payments/recordWriteRetry';

/**
 * The record write's retry loop (src/payments/recordWriteRetry.ts) driven directly: the timers it asks for, the
 * budget's bound, the error the run fails with (what the reconciler's alert shows) and the rollover's carry.
 */
type Task = { call: 'write' } | { call: 'timer'; atMs: number };

function loop(retry: RetryBudget, from?: { startedMs: number; round: number }, roundsPerExecution?: number) {
  let now = 1_000_000;
  const carried: Array<{ startedMs: number; round: number }> = [];
  const run = writeRecordWithin<Task>(
    () => ({ call: 'write' }),
    retry,
    () => now,
    (atMs) => ({ call: 'timer', atMs }),
    from,
    roundsPerExecution === undefined ? undefined : { roundsPerExecution, continueAsNew: (at) => void carried.push(at) },
  );
  return {
    run,
    carried,
    now: () => now,
    /** The write fails with `error`: the timer asked for, the clock moved to it, and the next step. */
    fail(error: unknown) {
      const timer = run.throw(error);
      if (timer.done) return { timer: undefined, after: timer };
      now = (timer.value as { atMs: number }).atMs;
      return { timer: timer.value, after: run.next() };
    },
  };
}

const retry: RetryBudget = { budgetMs: 10_000, firstDelayMs: 1_000, maxDelayMs: 4_000 };

describe('writeRecordWithin', () => {
  test('a write that lands at once: written, no timer', () => {
    const l = loop(retry);
    expect(l.run.next().value).toEqual({ call: 'write' });
    expect(l.run.next()).toEqual({ done: true, value: 'written' });
  });

  test('the timers: now + first delay, doubling, capped; then the write again', () => {
    const l = loop(retry);
    l.run.next();
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      const before = l.now();
      const { timer, after } = l.fail(new Error('down'));
      delays.push((timer as { atMs: number }).atMs - before);
      expect(after.value).toEqual({ call: 'write' });
    }
    expect(delays).toEqual([1_000, 2_000, 4_000]);
  });

  test('a retry landing exactly at the budget still runs; past it the run fails with the tries and the cause', () => {
    // 1 s + 2 s + 4 s = 7 s; the next (4 s, capped) lands at 11 s > 10 s.
    const exact = loop({ ...retry, budgetMs: 7_000 });
    exact.run.next();
    for (let i = 0; i < 3; i++) expect(exact.fail(new Error('down')).after.value).toEqual({ call: 'write' });
    expect(exact.now()).toBe(1_000_000 + 7_000);
    let thrown: unknown;
    try {
      exact.run.throw(new Error('ECONNREFUSED 127.0.0.1:10002'));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(RecordWriteBudgetError);
    expect((thrown as RecordWriteBudgetError).message).toBe('the record write failed for its whole retry budget (4 tries): ECONNREFUSED 127.0.0.1:10002');
    expect((thrown as RecordWriteBudgetError).retryable).toBe(false);
  });

  test("a cause that is not an Error is quoted as a string; the error's message is cut to 500 characters", () => {
    const l = loop({ ...retry, budgetMs: 0 });
    l.run.next();
    expect(() => l.run.throw('HTTP 503')).toThrow('the record write failed for its whole retry budget (1 tries): HTTP 503');
    const long = loop({ ...retry, budgetMs: 0 });
    long.run.next();
    try {
      long.run.throw(new Error('x'.repeat(900)));
      throw new Error('not thrown');
    } catch (error) {
      expect((error as Error).message).toHaveLength(500);
    }
  });

  test('continued from a carry: the budget counts from its first try, the backoff from its round', () => {
    const l = loop(retry, { startedMs: 1_000_000 - 5_000, round: 2 });
    l.run.next();
    // Round 2: 4 s (capped at 4 s); the start was 5 s ago: 9 s <= 10 s.
    expect(l.fail(new Error('down')).timer).toEqual({ call: 'timer', atMs: 1_000_000 + 4_000 });
    expect(() => l.run.throw(new Error('still down'))).toThrow('(4 tries): still down');
  });

  test('with a rollover: after roundsPerExecution tries in this execution it continues as new with the first try time and the next round', () => {
    const l = loop({ ...retry, budgetMs: 86_400_000 }, { startedMs: 900_000, round: 7 }, 2);
    l.run.next();
    const first = l.fail(new Error('down'));
    expect(first.after.value).toEqual({ call: 'write' });
    expect(l.carried).toEqual([]);
    const second = l.fail(new Error('down'));
    expect(second.after).toEqual({ done: true, value: 'continued' });
    expect(l.carried).toEqual([{ startedMs: 900_000, round: 9 }]);
  });

  test('a rollover of one try continues as new after the first failure', () => {
    const l = loop({ ...retry, budgetMs: 86_400_000 }, undefined, 1);
    l.run.next();
    expect(l.fail(new Error('down')).after).toEqual({ done: true, value: 'continued' });
    expect(l.carried).toEqual([{ startedMs: 1_000_000, round: 1 }]);
  });
});

describe('retryDelayMs', () => {
  test('the doubling stops at 2^30 rounds, whatever the cap', () => {
    const uncapped = { budgetMs: 0, firstDelayMs: 1, maxDelayMs: Number.MAX_SAFE_INTEGER };
    expect(retryDelayMs(uncapped, 30)).toBe(2 ** 30);
    expect(retryDelayMs(uncapped, 45)).toBe(2 ** 30);
    expect(retryDelayMs(uncapped, 3)).toBe(8);
  });
});

describe("a call's record write inside its activity (writeWhileCallLeased)", () => {
  /** A write failing with `errors` in turn, then answering 'completed'; the waits it slept and the lease left. */
  function writer(errors: Error[], leaseMs = 60_000) {
    let now = 0;
    const slept: number[] = [];
    let tries = 0;
    const write = async () => {
      tries++;
      const error = errors.shift();
      if (error !== undefined) throw error;
      return 'completed';
    };
    const sleep = async (ms: number) => void (slept.push(ms), (now += ms));
    return { go: () => writeWhileCallLeased(write, () => leaseMs - now, sleep), slept, tries: () => tries };
  }
  const timeout = () => new StoreUnavailableError('timeout', 'complete');

  test('a store that did not answer: tried again after 1, 2 and 4 s, then its error', async () => {
    expect(CALL_WRITE_RETRY_DELAYS_MS).toEqual([1_000, 2_000, 4_000]);
    const twice = writer([timeout(), timeout()]);
    expect(await twice.go()).toBe('completed');
    expect(twice.slept).toEqual([1_000, 2_000]);
    const always = writer([timeout(), timeout(), timeout(), timeout()]);
    await expect(always.go()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(always.slept).toEqual([1_000, 2_000, 4_000]);
    expect(always.tries()).toBe(4);
  });

  test('not past the lease: a wait the lease does not cover is not made', async () => {
    const short = writer([timeout(), timeout(), timeout()], 3_500);
    await expect(short.go()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(short.slept).toEqual([1_000, 2_000]); // 500 ms left: not 4 s more
    const lapsed = writer([timeout()], 1_000);
    await expect(lapsed.go()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(lapsed.slept).toEqual([]);
  });

  test('a refusal or a fence: thrown at once, not tried again', async () => {
    for (const error of [new StoreRequestError('forbidden', 'complete', 403), new LeaseLostError('payments:k', 1, 'complete'), new Error('bug')]) {
      const refused = writer([error]);
      await expect(refused.go()).rejects.toBe(error);
      expect(refused.tries()).toBe(1);
      expect(refused.slept).toEqual([]);
    }
  });
});
