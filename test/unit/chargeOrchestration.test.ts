import {
  chargeOrchestration,
  handOffOrchestration,
  StaleAttemptError,
  type ChargeOrchestrationInput,
  type ChargeSteps,
} from '../../src/payments/chargeOrchestration';
import type { ChargeResult } from '../../src/payments/schema';
import { chargeStepsSetup, type Task } from '../support/chargeSteps';

const { clock, steps, input, handoffInput, charged } = chargeStepsSetup({ entityKeyInCall: true });

describe('charge orchestration, driven step by step', () => {
  test('begin -> provider call with the payment key -> complete -> returns the charge', () => {
    const run = chargeOrchestration(input, steps);
    expect(run.next().value).toEqual({ call: 'entity:abc:begin', arg: { name: 'begin', attempt: 3 } });
    expect(run.next({ decision: 'proceed' }).value).toEqual({ call: 'activity:chargeProvider', arg: { idempotencyKey: 'pay-1', payment: input.payment } });
    expect(run.next(charged).value).toEqual({ call: 'entity:abc:complete', arg: { name: 'complete', attempt: 3, result: charged } });
    expect(run.next({ decision: 'recorded' })).toEqual({ done: true, value: charged });
  });

  test('an entity that already has a result: returns it and never calls the provider', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    expect(run.next({ decision: 'alreadyCompleted', result: charged })).toEqual({ done: true, value: charged });
  });

  test('a stale attempt stops before the provider call', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    expect(() => run.next({ decision: 'stale', currentAttempt: 4 })).toThrow(StaleAttemptError);
  });

  test('a failed provider call is retried by the run (PROVIDER_RETRY: timers 2, 4, 8, 16 s, 5 calls); then fail on the entity, and the run fails', () => {
    clock.now = 1_000_000;
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
    for (const delayMs of [2_000, 4_000, 8_000, 16_000]) {
      expect(run.throw(new Error('payment provider answered 503')).value).toEqual({ call: 'timer', arg: clock.now + delayMs });
      clock.advance(delayMs);
      expect(run.next().value).toMatchObject({ call: 'activity:chargeProvider', arg: { idempotencyKey: 'pay-1', lookUpFirst: true } });
    }
    expect(run.throw(new Error('payment provider answered 503')).value).toEqual({
      call: 'entity:abc:fail',
      arg: { name: 'fail', attempt: 3, reason: 'payment provider answered 503' },
    });
    expect(() => run.next({ decision: 'recorded' })).toThrow('payment provider answered 503');
  });

  test('a decline is a result: recorded as completed, not retried', () => {
    const declined: ChargeResult = { status: 'declined', reason: 'card_declined' };
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
    expect(run.next(declined).value).toMatchObject({ call: 'entity:abc:complete', arg: { result: declined } });
    expect(run.next({ decision: 'recorded' })).toEqual({ done: true, value: declined });
  });

  test('when another run recorded first, its result wins', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
    run.next({ ...charged, chargeId: 'ch_mine' });
    expect(run.next({ decision: 'alreadyCompleted', result: charged })).toEqual({ done: true, value: charged });
  });
});

/** Look before you charge again (docs/DESIGN.md): which provider calls carry `lookUpFirst`, in both designs. */
describe('charge orchestration: lookUpFirst on the provider calls', () => {
  const designs: Record<string, ChargeOrchestrationInput> = {
    hold: input,
    handoff: handoffInput({ budgetMs: 3_600_000, firstDelayMs: 5_000, maxDelayMs: 60_000 }),
  };
  const lookUpFirstOf = (task: unknown) => ((task as Task).arg as { lookUpFirst?: boolean }).lookUpFirst === true;

  /** The first call after `begin` answered `reply`, then the call after one transient failure (and its timer). */
  function firstAndRetry(runInput: ChargeOrchestrationInput, reply: unknown): [boolean, boolean] {
    const run = chargeOrchestration(runInput, steps);
    run.next();
    const first = run.next(reply).value;
    expect(first).toMatchObject({ call: 'activity:chargeProvider' });
    expect(run.throw(new Error('payment provider: no answer within 2000 ms')).value).toMatchObject({ call: 'timer' });
    const retry = run.next().value;
    expect(retry).toMatchObject({ call: 'activity:chargeProvider' });
    return [lookUpFirstOf(first), lookUpFirstOf(retry)];
  }

  test.each(Object.keys(designs))('%s: default (uncertain): a clean first call charges blind; the retry after a transient error looks up first', (design) => {
    expect(firstAndRetry(designs[design], { decision: 'proceed' })).toEqual([false, true]);
    expect(firstAndRetry({ ...designs[design], providerLookup: 'uncertain' }, { decision: 'proceed' })).toEqual([false, true]);
  });

  test.each(Object.keys(designs))('%s: uncertain: after a begin that says an earlier attempt may have charged, the first call looks up too', (design) => {
    expect(firstAndRetry(designs[design], { decision: 'proceed', uncertain: true })).toEqual([true, true]);
  });

  test.each(Object.keys(designs))('%s: always: every call looks up first', (design) => {
    expect(firstAndRetry({ ...designs[design], providerLookup: 'always' }, { decision: 'proceed' })).toEqual([true, true]);
  });

  test.each(Object.keys(designs))('%s: off: no call looks up, not even a retry or after an uncertain begin', (design) => {
    expect(firstAndRetry({ ...designs[design], providerLookup: 'off' }, { decision: 'proceed', uncertain: true })).toEqual([false, false]);
  });

  test('the call keeps the payment key, payment and correlation id', () => {
    const run = chargeOrchestration({ ...input, correlationId: 'corr-1', providerLookup: 'always' }, steps);
    run.next();
    expect(run.next({ decision: 'proceed' }).value).toEqual({
      call: 'activity:chargeProvider',
      arg: { idempotencyKey: 'pay-1', payment: input.payment, correlationId: 'corr-1', lookUpFirst: true },
    });
  });
});

/** The provider's declared capability (src/payments/providerLookup.ts): re-send, look up or hold, by the key's age. */
describe('charge orchestration: the declared capability plans each call', () => {
  const HOUR = 3_600_000;
  const stripe = { lookup: 'none', keyMemoryHours: 24 } as const;
  const argOf = (task: unknown) => (task as Task).arg as { lookUpFirst?: boolean; hold?: string };

  test.each(['hold', 'handoff'] as const)(
    '%s: a retry inside the key memory is re-sent with the key; the run adds its own elapsed time to the key age, and past the memory with no look-up the call is a hold',
    (design) => {
      clock.now = 5_000_000;
      const base = design === 'hold' ? input : handoffInput({ budgetMs: 3_600_000, firstDelayMs: 600_000, maxDelayMs: 600_000 });
      const run = chargeOrchestration({ ...base, provider: stripe, keyAgeAtStartMs: 21.5 * HOUR }, steps);
      run.next();
      expect(argOf(run.next({ decision: 'proceed' }).value)).toEqual(expect.not.objectContaining({ lookUpFirst: true }));
      const timer = run.throw(new Error('payment provider answered 503')).value as Task;
      clock.now = timer.arg as number; // the holding design waits 2 s, the handoff 10 min
      const retry = argOf(run.next().value);
      if (design === 'hold')
        expect(retry).toEqual(expect.not.objectContaining({ hold: expect.any(String) })); // 21.5 h + 2 s < 21.6 h
      else expect(retry.hold).toMatch(/1300 min old.*PAYMENT_PROVIDER_LOOKUP is none/); // 21.5 h + 10 min > 21.6 h
    },
  );

  test('by-key past the memory: the retry looks up first; a key of unknown age is never trusted', () => {
    const run = chargeOrchestration({ ...input, provider: { lookup: 'by-key', keyMemoryHours: 24 } }, steps);
    run.next();
    expect(argOf(run.next({ decision: 'proceed', uncertain: true }).value)).toMatchObject({ lookUpFirst: true });
  });

  test('hold design: a held result is recorded as a failure on the entity (open for the operator), never completed there', () => {
    const held: ChargeResult = { status: 'failed', reason: 'held for an operator: x', code: 'held-for-operator' };
    const run = chargeOrchestration({ ...input, provider: stripe, keyAgeAtStartMs: 30 * 24 * HOUR }, steps);
    run.next();
    expect(argOf(run.next({ decision: 'proceed', uncertain: true }).value).hold).toMatch(/held|cannot be checked/);
    expect(run.next(held).value).toEqual({ call: 'entity:abc:fail', arg: { name: 'fail', attempt: 3, reason: held.reason } });
    expect(run.next({ decision: 'recorded' })).toEqual({ done: true, value: held });
  });
});

describe('charge orchestration: its errors, missing steps and version 1 runs', () => {
  const { steps, input, handoffInput } = chargeStepsSetup();

  test('StaleAttemptError names both attempts and is not retryable (the newer delivery finishes the charge)', () => {
    const error = new StaleAttemptError(2, 3);
    expect(error.message).toBe('charge attempt 2 is stale: attempt 3 is on record');
    expect(error.retryable).toBe(false);
  });

  test('holding design without timer steps: the failed call is recorded as fail with why, and thrown with its cause', () => {
    const noTimer: ChargeSteps<Task> = { callEntity: steps.callEntity, chargeProvider: steps.chargeProvider };
    const run = chargeOrchestration(input, noTimer);
    run.next();
    run.next({ decision: 'proceed' });
    const cause = new Error('provider 503');
    const failing = run.throw(cause).value as Task;
    const why = 'the charge needs the timer and nowMs steps to retry the provider';
    expect(failing).toEqual({ call: 'entity:fail', arg: { name: 'fail', attempt: 3, reason: why } });
    let thrown: unknown;
    try {
      run.next({ decision: 'recorded' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toEqual(new Error(why));
    expect((thrown as Error).cause).toBe(cause);
  });

  test('handoff without its steps: refused with what is missing', () => {
    const run = handOffOrchestration(handoffInput({ budgetMs: 1, firstDelayMs: 1, maxDelayMs: 1 }), { budgetMs: 1 } as never, {
      callEntity: steps.callEntity,
      chargeProvider: steps.chargeProvider,
    });
    expect(() => run.next()).toThrow('the handoff charge needs the completeRecord, timer and nowMs steps');
  });

  test('a version 1 run (no version in its plan) begins without a run key, as its history has it', () => {
    const run = chargeOrchestration(handoffInput({ budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 5_000 }), steps);
    expect(run.next().value).toEqual({ call: 'entity:begin', arg: { name: 'begin', attempt: 3 } });
  });
});
