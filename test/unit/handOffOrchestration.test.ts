import {
  chargeOrchestration,
  handOffPlan,
  HANDOFF_VERSION,
  RECORD_WRITE_RETRY,
  RecordWriteBudgetError,
  retryDelayMs,
  StaleAttemptError,
  type ChargeOrchestrationInput,
  type ChargeSteps,
} from '../../src/payments/chargeOrchestration';
import { RECORD_WRITE_ROUNDS_PER_EXECUTION } from '../../src/payments/recordWriteRetry';
import { chargeStepsSetup, START_MS, type Task } from '../support/chargeSteps';

const { clock, steps, claim, payment, handoffInput, charged } = chargeStepsSetup();
const input = handoffInput({ budgetMs: 60_000, firstDelayMs: 10_000, maxDelayMs: 25_000 });

describe('handoff charge orchestration, driven step by step', () => {
  beforeEach(() => (clock.now = START_MS));

  test('begin -> provider -> entity complete -> completeRecord with the claim that started the run -> the charge', () => {
    const run = chargeOrchestration(input, steps);
    expect(run.next().value).toMatchObject({ call: 'entity:begin', arg: { attempt: 3 } });
    expect(run.next({ decision: 'proceed' }).value).toMatchObject({ call: 'activity:chargeProvider' });
    expect(run.next(charged).value).toEqual({ call: 'entity:complete', arg: { name: 'complete', attempt: 3, result: charged } });
    expect(run.next({ decision: 'recorded' }).value).toEqual({ call: 'activity:completeRecord', arg: { claim, result: charged, payment } });
    expect(run.next('completed')).toEqual({ done: true, value: charged });
  });

  test('an entity that already has a result (a retried run): the record is completed with it, the provider is never called', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    expect(run.next({ decision: 'alreadyCompleted', result: charged }).value).toEqual({
      call: 'activity:completeRecord',
      arg: { claim, result: charged, payment },
    });
    expect(run.next('completed')).toEqual({ done: true, value: charged });
  });

  test('a stale attempt writes nothing: no provider call, no record write', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    expect(() => run.next({ decision: 'stale', currentAttempt: 4 })).toThrow(StaleAttemptError);
  });

  test('transient failures wait on durable timers (first, doubling, capped) and call again; a later success completes the record', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
    expect(run.throw(new Error('provider 503')).value).toEqual({ call: 'timer', arg: 1_010_000 });
    clock.now = 1_010_000;
    expect(run.next().value).toMatchObject({ call: 'activity:chargeProvider' });
    expect(run.throw(new Error('provider 503')).value).toEqual({ call: 'timer', arg: 1_030_000 });
    clock.now = 1_030_000;
    run.next();
    expect(run.next(charged).value).toMatchObject({ call: 'entity:complete' });
    expect(run.next({ decision: 'recorded' }).value).toMatchObject({ call: 'activity:completeRecord', arg: { result: charged } });
  });

  test('past the budget: entity fail with the reason, the record completed as failed with it, the run ends failed (no throw)', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
    run.throw(new Error('provider 503')); // timer at +10 s
    clock.advance(10_000);
    run.next();
    run.throw(new Error('provider 503')); // timer at +30 s
    clock.advance(20_000);
    run.next();
    expect(run.throw(new Error('provider 503')).value).toEqual({ call: 'timer', arg: clock.now + 25_000 }); // +55 s: still inside 60 s
    clock.advance(25_000);
    run.next();
    const fail = run.throw(new Error('provider timed out')).value as Task; // the next would start at +80 s: past the budget
    expect(fail).toMatchObject({ call: 'entity:fail', arg: { attempt: 3 } });
    const reason = (fail.arg as { reason: string }).reason;
    expect(reason).toMatch(/retry budget \(1 min, 4 rounds\): provider timed out/);
    expect(run.next({ decision: 'recorded' }).value).toEqual({
      call: 'activity:completeRecord',
      arg: { claim, result: { status: 'failed', reason }, payment },
    });
    expect(run.next('completed')).toEqual({ done: true, value: { status: 'failed', reason } });
  });

  test('a record write the store refuses is called again on durable timers (1 s doubling to 5 min) past the old 8 tries / 127 s: the run completes, never fails', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    expect(run.next({ decision: 'alreadyCompleted', result: charged }).value).toMatchObject({ call: 'activity:completeRecord' });
    const timers: number[] = [];
    // A 6-hour outage: every try fails until then.
    while (clock.now - START_MS < 6 * 3_600_000) {
      const step = run.throw(new Error('StoreUnavailableError: ECONNREFUSED')).value as Task;
      expect(step.call).toBe('timer');
      timers.push((step.arg as number) - clock.now);
      clock.now = step.arg as number;
      expect(run.next().value).toEqual({ call: 'activity:completeRecord', arg: { claim, result: charged, payment } });
    }
    expect(timers.slice(0, 10)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000]);
    expect(timers.length).toBeGreaterThan(8);
    expect(run.next('completed')).toEqual({ done: true, value: charged });
  });

  test('past the record write budget (7 days) the run fails with RecordWriteBudgetError (the reconciler finds it); a plan may carry a shorter one', () => {
    expect(RECORD_WRITE_RETRY.budgetMs).toBe(7 * 86_400_000);
    const short = { ...input, handoff: { ...input.handoff!, recordRetry: { budgetMs: 5_000, firstDelayMs: 1_000, maxDelayMs: 2_000 } } };
    const run = chargeOrchestration(short, steps);
    run.next();
    run.next({ decision: 'alreadyCompleted', result: charged });
    for (const delay of [1_000, 2_000, 2_000]) {
      expect(run.throw(new Error('down')).value).toEqual({ call: 'timer', arg: clock.now + delay });
      clock.advance(delay);
      run.next();
    }
    expect(() => run.throw(new Error('down'))).toThrow(RecordWriteBudgetError);
  });

  test('a long record-write outage continues as new every recordRoundsPerExecution tries, carrying the result, the first try time and the tries: the history stays bounded, the 7-day budget and the backoff go on across executions', () => {
    const continued: ChargeOrchestrationInput[] = [];
    const rolling: ChargeSteps<Task> = { ...steps, continueAsNew: (next) => void continued.push(next) };
    const planned = { ...input, handoff: { ...input.handoff!, recordRoundsPerExecution: 3 } };
    const run = chargeOrchestration(planned, rolling);
    run.next();
    expect(run.next({ decision: 'alreadyCompleted', result: charged }).value).toMatchObject({ call: 'activity:completeRecord' });
    for (const delay of [1_000, 2_000]) {
      expect(run.throw(new Error('down')).value).toEqual({ call: 'timer', arg: clock.now + delay });
      clock.advance(delay);
      expect(run.next().value).toMatchObject({ call: 'activity:completeRecord' });
    }
    // The third try fails: its timer, then the run continues as new (nothing more in this execution's history).
    expect(run.throw(new Error('down')).value).toEqual({ call: 'timer', arg: clock.now + 4_000 });
    clock.advance(4_000);
    expect(run.next().done).toBe(true);
    expect(continued).toEqual([{ ...planned, recordWrite: { result: charged, startedMs: START_MS, round: 3 } }]);

    // The next execution goes straight to the write (no entity, no provider), the backoff where it was.
    const next = chargeOrchestration(continued[0], rolling);
    expect(next.next().value).toEqual({ call: 'activity:completeRecord', arg: { claim, result: charged, payment } });
    expect(next.throw(new Error('down')).value).toEqual({ call: 'timer', arg: clock.now + 8_000 });
    clock.advance(8_000);
    next.next();
    expect(next.next('completed')).toEqual({ done: true, value: charged });

    // The 7-day budget counts from the first try of the first execution.
    const late = chargeOrchestration({ ...continued[0], recordWrite: { result: charged, startedMs: clock.now - 7 * 86_400_000, round: 40 } }, rolling);
    late.next();
    expect(() => late.throw(new Error('down'))).toThrow(RecordWriteBudgetError);
  });

  test('a run started before the rollover existed (no recordRoundsPerExecution) or without continueAsNew never continues as new', () => {
    const continued: unknown[] = [];
    for (const [plan, rolling] of [
      [input, { ...steps, continueAsNew: (next: unknown) => void continued.push(next) }],
      [{ ...input, handoff: { ...input.handoff!, recordRoundsPerExecution: 2 } }, steps],
    ] as const) {
      const run = chargeOrchestration(plan, rolling as ChargeSteps<Task>);
      run.next();
      run.next({ decision: 'alreadyCompleted', result: charged });
      for (let i = 0; i < 30; i++) {
        const timer = run.throw(new Error('down')).value as Task;
        clock.now = timer.arg as number;
        expect(run.next().value).toMatchObject({ call: 'activity:completeRecord' });
      }
    }
    expect(continued).toEqual([]);
  });

  test('handOffPlan: what the starters hand a run today (version 2, the rollover every 20 tries)', () => {
    expect(handOffPlan(claim, input.handoff!.retry)).toEqual({
      version: HANDOFF_VERSION,
      claim,
      retry: input.handoff!.retry,
      recordRoundsPerExecution: 20,
      settleUncertain: true,
      settleTries: 5,
    });
    expect(RECORD_WRITE_ROUNDS_PER_EXECUTION).toBe(20);
  });

  test('retryDelayMs: first, doubling, capped', () => {
    const retry = { budgetMs: 0, firstDelayMs: 5_000, maxDelayMs: 300_000 };
    expect([0, 1, 2, 6, 7, 40].map((r) => retryDelayMs(retry, r))).toEqual([5_000, 10_000, 20_000, 300_000, 300_000, 300_000]);
  });
});
