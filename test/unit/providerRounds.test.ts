/**
 * A handoff run's provider rounds (src/payments/providerRounds.ts) driven step by step, edge by edge. The key's age from its origin and from the start, the key-memory guard of
 * version 2 runs only, the call lease carried, the budget's last round at its bound, the settle's first wait (a call's
 * lease when it looks up and may try again), the settle tried again after a call's lease and then held, the settling
 * call (look-up or hold) per capability, legacy modes included, and the reasons' bounds.
 */
import type { ChargeActivityInput, ChargeOrchestrationInput } from '../../src/payments/chargeInputs';
import type { RecordedCharge } from '../../src/payments/completeRecord';
import { CALL_LEASE_MS } from '../../src/payments/callFence';
import { HANDOFF_VERSION } from '../../src/payments/handOffPlan';
import { chargeWithinBudget, providerCall } from '../../src/payments/providerRounds';
import type { RetryBudget } from '../../src/payments/recordWriteRetry';
import type { ChargeResult } from '../../src/payments/schema';

const HOUR_MS = 3_600_000;
const T0 = 1_000_000;
const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 500, currency: 'EUR' };
const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_1', amount: 500, currency: 'EUR' };
const base: ChargeOrchestrationInput = { idempotencyKey: 'pay-1', entityKey: 'e', attempt: 1, payment, provider: { lookup: 'by-key', keyMemoryHours: 24 } };
/** Three rounds fit: failures at 0 and 10 s, the third at 30 s (its retry would start at 50 s, past the budget). */
const RETRY: RetryBudget = { budgetMs: 30_000, firstDelayMs: 10_000, maxDelayMs: 20_000 };

type Task = { readonly call: 'provider'; readonly arg: ChargeActivityInput } | { readonly call: 'timer'; readonly arg: number };

/** Runs the rounds to their end: a timer moves the clock to its time; a provider call gets `answer` (an Error is thrown in). */
function drive(
  input: ChargeOrchestrationInput,
  answer: (call: ChargeActivityInput, n: number) => RecordedCharge | Error,
  { retry = RETRY, settleUncertain = false, settleTries = 1 }: { retry?: RetryBudget; settleUncertain?: boolean; settleTries?: number } = {},
): { value: RecordedCharge; tasks: Task[]; calls: ChargeActivityInput[] } {
  let now = T0;
  const run = chargeWithinBudget<Task>(
    input,
    retry,
    (arg) => ({ call: 'provider', arg }),
    (answered) => answered as RecordedCharge,
    () => now,
    (atMs) => ({ call: 'timer', arg: atMs }),
    false,
    settleUncertain,
    settleTries,
  );
  const tasks: Task[] = [];
  let next = run.next();
  while (!next.done) {
    if (tasks.length > 40) throw new Error('the run does not end');
    const task = next.value;
    tasks.push(task);
    if (task.call === 'timer') {
      now = Math.max(now, task.arg);
      next = run.next();
    } else {
      const a = answer(task.arg, tasks.filter((t) => t.call === 'provider').length - 1);
      next = a instanceof Error ? run.throw(a) : run.next(a);
    }
  }
  const calls = tasks.flatMap((t) => (t.call === 'provider' ? [t.arg] : []));
  return { value: next.value, tasks, calls };
}

const failing = () => new Error('provider 503');
const timers = (tasks: Task[]) => tasks.flatMap((t) => (t.call === 'timer' ? [t.arg - T0] : []));

describe('providerCall: the key age and the key-memory guard', () => {
  const originMs = Date.UTC(2026, 0, 1);
  const none = { ...base, provider: { lookup: 'none', keyMemoryHours: 24 } } as ChargeOrchestrationInput;

  test('age from the origin alone (no age at start): 23 h old at the call, past 90 % of 24 h: held', () => {
    const call = providerCall({ ...none, keyOriginMs: originMs }, 1, false, 0, originMs + 23 * HOUR_MS);
    expect(call.hold).toMatch(/the key is 1380 min old/);
  });

  test('the larger of the two ages: 23 h from the origin beats 1 h from the start', () => {
    const call = providerCall({ ...none, keyOriginMs: originMs, keyAgeAtStartMs: HOUR_MS }, 1, false, 0, originMs + 23 * HOUR_MS);
    expect(call.hold).toMatch(/the key is 1380 min old/);
  });

  test('a version 2 run relying on the key memory carries the guard; a version 1 run (or no clock) does not', () => {
    const v2 = { ...base, keyAgeAtStartMs: HOUR_MS, handoff: { version: HANDOFF_VERSION } } as unknown as ChargeOrchestrationInput;
    const now = originMs + HOUR_MS;
    expect(providerCall(v2, 1, false, 0, now)).toEqual({
      idempotencyKey: 'pay-1',
      payment,
      correlationId: undefined,
      keyMemory: { trustedUntilMs: now - HOUR_MS + 24 * HOUR_MS * 0.9, otherwise: { lookUpFirst: true } },
      // A retry round: a rejection then is not the provider's word about the earlier call (providerWord.test.ts).
      mayRepeat: true,
    });
    const v1 = { ...v2, handoff: { version: 1 } } as unknown as ChargeOrchestrationInput;
    expect(providerCall(v1, 1, false, 0, now).keyMemory).toBeUndefined();
    expect(providerCall(v2, 1, false, 0, undefined).keyMemory).toBeUndefined();
  });
});

describe("providerCall: what a version 2 run's call carries", () => {
  const originMs = Date.UTC(2026, 0, 1);
  const v2 = (provider: ChargeOrchestrationInput['provider'], extra: Partial<ChargeOrchestrationInput> = {}) =>
    ({ ...base, provider, keyOriginMs: originMs, handoff: { version: HANDOFF_VERSION }, ...extra }) as unknown as ChargeOrchestrationInput;

  test("charges created from the key's origin less the provider's clock skew (10 min) are this payment's; a version 1 run, or no clock, names none", () => {
    expect(providerCall(v2({ lookup: 'by-key', keyMemoryHours: 24 }), 0, false, 0, originMs).chargesFromMs).toBe(originMs - 10 * 60_000);
    const v1 = { ...v2({ lookup: 'by-key', keyMemoryHours: 24 }), handoff: { version: 1 } } as unknown as ChargeOrchestrationInput;
    expect(providerCall(v1, 0, false, 0, originMs)).not.toHaveProperty('chargesFromMs');
    expect(providerCall(v2({ lookup: 'by-key', keyMemoryHours: 24 }), 0, false, 0, undefined)).not.toHaveProperty('chargesFromMs');
  });

  test('a look-up whose provider memory does not replay earlier calls (none kept, or only successes) must see them; a memory of every answer, or a hold, does not ask it', () => {
    const late = originMs + 30 * HOUR_MS; // past 90 % of 24 h: a retry looks up
    expect(providerCall(v2({ lookup: 'by-key', keyMemoryHours: 0 }), 0, false, 0, late)).toMatchObject({ lookUpFirst: true, lookUpSeesEarlierCalls: true });
    const successes = v2({ lookup: 'by-key', keyMemoryHours: 24, memoryKeepsOnlySuccesses: true });
    expect(providerCall(successes, 1, false, 0, late)).toMatchObject({ lookUpFirst: true, lookUpSeesEarlierCalls: true });
    const everyAnswer = providerCall(v2({ lookup: 'by-key', keyMemoryHours: 24 }), 1, false, 0, late);
    expect(everyAnswer.lookUpFirst).toBe(true);
    expect(everyAnswer).not.toHaveProperty('lookUpSeesEarlierCalls');
    const held = providerCall(v2({ lookup: 'none', keyMemoryHours: 0 }), 0, false, 0, late);
    expect(held.hold).toEqual(expect.any(String));
    expect(held).not.toHaveProperty('lookUpSeesEarlierCalls');
    // A version 1 run replays as it was planned: without the mark.
    const v1 = { ...v2({ lookup: 'by-key', keyMemoryHours: 0 }), handoff: { version: 1 } } as unknown as ChargeOrchestrationInput;
    expect(providerCall(v1, 0, false, 0, late)).not.toHaveProperty('lookUpSeesEarlierCalls');
  });

  test("a first call's plan for a repeat (ifRepeat) carries the retry round's key-memory guard", () => {
    const now = originMs + HOUR_MS;
    expect(providerCall(v2({ lookup: 'by-key', keyMemoryHours: 24 }), 0, false, 0, now).ifRepeat).toEqual({
      keyMemory: { trustedUntilMs: originMs + 24 * HOUR_MS * 0.9, otherwise: { lookUpFirst: true } },
      mayRepeat: true,
    });
  });
});

describe('chargeWithinBudget: the rounds within the budget', () => {
  test("a retry budget's callLeaseMs rides along on every call", () => {
    const { calls } = drive(base, (_c, n) => (n < 1 ? failing() : { result: charged }), { retry: { ...RETRY, callLeaseMs: 1_500 } });
    expect(calls.map((c) => c.callLeaseMs)).toEqual([1_500, 1_500]);
  });

  test("a retry budget's postWindowMs rides along on every call; without one, no call carries it", () => {
    const { calls } = drive(base, (_c, n) => (n < 1 ? failing() : { result: charged }), { retry: { ...RETRY, postWindowMs: 90_000 } });
    expect(calls.map((c) => c.postWindowMs)).toEqual([90_000, 90_000]);
    const plain = drive(base, (_c, n) => (n < 1 ? failing() : { result: charged }));
    expect(plain.calls.every((c) => !('postWindowMs' in c))).toBe(true);
  });

  test('without settleUncertain (runs started before it), a spent budget ends failed: no settling call', () => {
    let now = T0;
    const run = chargeWithinBudget<Task>(
      base,
      RETRY,
      (arg) => ({ call: 'provider', arg }),
      (answered) => answered as RecordedCharge,
      () => now,
      (atMs) => ({ call: 'timer', arg: atMs }),
      false,
    );
    let calls = 0;
    let next = run.next();
    while (!next.done) {
      const task = next.value;
      if (task.call === 'timer') {
        now = Math.max(now, task.arg);
        next = run.next();
      } else {
        calls++;
        expect(task.arg.lookUpOnly).toBeUndefined();
        next = run.throw(failing());
      }
    }
    expect(calls).toBe(3);
    expect(next.value).toMatchObject({ result: { status: 'failed' }, record: 'unwritten' });
  });

  test('a retry starting exactly at the budget still runs: three calls, then failed with the count', () => {
    const { value, calls, tasks } = drive(base, failing);
    expect(calls).toHaveLength(3);
    expect(timers(tasks)).toEqual([10_000, 30_000]);
    expect(value).toEqual({
      result: { status: 'failed', reason: 'provider failed transiently for the whole retry budget (0.5 min, 3 rounds): provider 503' },
      record: 'unwritten',
    });
  });

  test('the reason is cut at 500 characters', () => {
    const { value } = drive(base, () => new Error('x'.repeat(1_000)));
    expect(value.result.status === 'failed' && value.result.reason).toHaveLength(500);
  });
});

describe('chargeWithinBudget: the settle after the budget', () => {
  const lookedUp = (c: ChargeActivityInput) => (c.lookUpOnly ? { result: charged, record: 'completed' as const } : failing());

  test('a look-up that may be tried again first waits out a call lease (3 min): the settle is a look-up only', () => {
    const { value, tasks, calls } = drive(base, lookedUp, { settleUncertain: true, settleTries: 5 });
    expect(timers(tasks)).toEqual([10_000, 30_000, 30_000 + CALL_LEASE_MS]);
    expect(calls[3]).toEqual({ idempotencyKey: 'pay-1', payment, correlationId: undefined, lookUpOnly: { failedReason: expect.stringMatching(/3 rounds/) } });
    expect(value).toEqual({ result: charged, record: 'completed' });
  });

  test('one settle try, or no look-up: the longest retry interval only', () => {
    expect(timers(drive(base, lookedUp, { settleUncertain: true, settleTries: 1 }).tasks)).toEqual([10_000, 30_000, 50_000]);
    const none = { ...base, provider: { lookup: 'none', keyMemoryHours: 24 } } as ChargeOrchestrationInput;
    expect(timers(drive(none, failing, { settleUncertain: true, settleTries: 5 }).tasks).slice(0, 3)).toEqual([10_000, 30_000, 50_000]);
  });

  test('a settle that fails is tried again after a call lease, settleTries times in all; then held for an operator, its cause cut at 150', () => {
    const retry = { ...RETRY, callLeaseMs: 60_000 };
    const cause = `CallInFlightError: ${'y'.repeat(300)}`;
    const { value, tasks, calls } = drive(base, (c) => (c.lookUpOnly ? new Error(cause) : failing()), { retry, settleUncertain: true, settleTries: 3 });
    expect(calls.filter((c) => c.lookUpOnly)).toHaveLength(3);
    expect(timers(tasks)).toEqual([10_000, 30_000, 90_000, 150_000, 210_000]);
    expect(value).toEqual({
      result: {
        status: 'failed',
        code: 'held-for-operator',
        reason: `held for an operator: the retry budget is spent and the last check could not be made (${cause.slice(0, 150)}): check the key at the provider`,
      },
      record: 'unwritten',
    });
  });

  test('the second settle try answers: its result, no third try', () => {
    const retry = { ...RETRY, callLeaseMs: 60_000 };
    let settles = 0;
    const answer = (c: ChargeActivityInput) => (c.lookUpOnly ? (++settles === 1 ? failing() : { result: charged, record: 'completed' as const }) : failing());
    const { value, calls } = drive(base, answer, { retry, settleUncertain: true, settleTries: 3 });
    expect(calls.filter((c) => c.lookUpOnly)).toHaveLength(2);
    expect(value).toEqual({ result: charged, record: 'completed' });
  });

  test('no look-up (none): the settling call holds, quoting at most 200 characters of the reason', () => {
    const none = { ...base, provider: { lookup: 'none', keyMemoryHours: 24 } } as ChargeOrchestrationInput;
    const { calls } = drive(none, () => new Error('z'.repeat(1_000)), { settleUncertain: true });
    const reason = `provider failed transiently for the whole retry budget (0.5 min, 3 rounds): ${'z'.repeat(1_000)}`.slice(0, 200);
    expect(calls[3]).toEqual({
      idempotencyKey: 'pay-1',
      payment,
      correlationId: undefined,
      hold: `the retry budget is spent and no call can be shown not to have charged (${reason}); PAYMENT_PROVIDER_LOOKUP is none, so only the provider can say: check the key there`,
    });
  });

  test("legacy modes: 'off' holds, 'always' looks up (and waits out a call lease)", () => {
    const legacy = (mode: 'off' | 'always') => ({ ...base, provider: undefined, providerLookup: mode }) as ChargeOrchestrationInput;
    const off = drive(legacy('off'), failing, { settleUncertain: true, settleTries: 5 });
    expect(off.calls[3].hold).toMatch(/PAYMENT_PROVIDER_LOOKUP is none/);
    const always = drive(legacy('always'), lookedUp, { settleUncertain: true, settleTries: 5 });
    expect(always.calls[3].lookUpOnly).toBeDefined();
    expect(timers(always.tasks)[2]).toBe(30_000 + CALL_LEASE_MS);
  });
});
