import { chargeOrchestration, HANDOFF_VERSION, type ChargeOrchestrationInput, type ChargeSteps } from '../../src/payments/chargeOrchestration';
import { applyChargeOperation, type ChargeEntityOperation } from '../../src/payments/chargeEntity';
import type { ChargeResult } from '../../src/payments/schema';
import { chargeStepsSetup, START_MS, type Task } from '../support/chargeSteps';

const { clock, steps: v1Steps, claim, payment, handoffInput, charged } = chargeStepsSetup();
const retry = { budgetMs: 60_000, firstDelayMs: 10_000, maxDelayMs: 25_000 };
const base = handoffInput(retry);
/** A run the starters write today (version 2). */
const input: ChargeOrchestrationInput = { ...base, handoff: { ...base.handoff!, version: HANDOFF_VERSION } };

let signals: Array<{ entityKey: string; operation: ChargeEntityOperation }>;
const steps: ChargeSteps<Task> = {
  ...v1Steps,
  chargeAndRecord: (activityInput, recordClaim) => ({ call: 'activity:chargeAndRecord', arg: { ...activityInput, recordClaim } }),
  signalEntity: (entityKey, operation) => void signals.push({ entityKey, operation }),
};

/** Runs `run` to its end answering each step from `answers` (in order); returns the calls it made and its value. */
function drive(run: Generator<Task, ChargeResult, unknown>, answers: unknown[]): { calls: string[]; value: ChargeResult } {
  const calls: string[] = [];
  let next = run.next();
  for (const answer of answers) {
    if (next.done) throw new Error(`the run ended before the answer ${JSON.stringify(answer)}`);
    calls.push(next.value.call);
    next = answer instanceof Error ? run.throw(answer) : run.next(answer);
  }
  if (!next.done) throw new Error(`the run still asks for ${next.value.call}`);
  return { calls, value: next.value };
}

describe('handoff charge orchestration, version 2: the record written by the charge activity, the entity told one-way', () => {
  beforeEach(() => {
    clock.now = START_MS;
    signals = [];
  });

  test('common path: begin (call) -> charge + record write (one activity, the claim rides along) -> signal complete: 2 calls + 1 signal, no completeRecord', () => {
    const run = chargeOrchestration(input, steps);
    expect(run.next().value).toEqual({ call: 'entity:begin', arg: { name: 'begin', attempt: 3, runKey: 'o1#3' } });
    expect(run.next({ decision: 'proceed' }).value).toEqual({
      call: 'activity:chargeAndRecord',
      // No window rides along: the activity announces its call on the record (src/payments/callFence.ts), fresh or stale alike.
      // A first call; should the engine run it again, the copy is planned as a retry round (docs/decisions/0032).
      arg: { idempotencyKey: 'pay-1', payment, correlationId: undefined, recordClaim: claim, ifRepeat: { lookUpFirst: true, mayRepeat: true } },
    });
    expect(signals).toEqual([]); // the entity hears the result only after the activity answered
    expect(run.next({ result: charged, record: 'completed' })).toEqual({ done: true, value: charged });
    expect(signals).toEqual([{ entityKey: 'abc', operation: { name: 'complete', attempt: 3, result: charged } }]);
  });

  test("the store did not answer the activity's write (unwritten): the entity is told, then completeRecord on durable timers until it lands", () => {
    const run = chargeOrchestration(input, steps);
    const storeDown = new Error('StoreUnavailableError: ECONNREFUSED');
    const { calls, value } = drive(run, [{ decision: 'proceed' }, { result: charged, record: 'unwritten' }, storeDown, undefined, 'completed']);
    expect(calls).toEqual(['entity:begin', 'activity:chargeAndRecord', 'activity:completeRecord', 'timer', 'activity:completeRecord']);
    expect(value).toEqual(charged);
    expect(signals.map((s) => s.operation.name)).toEqual(['complete']);
  });

  test("a write fenced by a newer attempt is left alone (no completeRecord); the entity is still told (it drops a stale attempt's result)", () => {
    const { calls, value } = drive(chargeOrchestration(input, steps), [{ decision: 'proceed' }, { result: charged, record: 'fenced' }]);
    expect(calls).toEqual(['entity:begin', 'activity:chargeAndRecord']);
    expect(value).toEqual(charged);
    expect(signals).toHaveLength(1);
  });

  test('a payment held for an operator (failed, written by the activity): signal fail with the reason, nothing more', () => {
    const held: ChargeResult = { status: 'failed', reason: 'held for an operator: x', code: 'held-for-operator' };
    const { calls, value } = drive(chargeOrchestration(input, steps), [{ decision: 'proceed' }, { result: held, record: 'completed' }]);
    expect(calls).toEqual(['entity:begin', 'activity:chargeAndRecord']);
    expect(value).toEqual(held);
    expect(signals).toEqual([{ entityKey: 'abc', operation: { name: 'fail', attempt: 3, reason: 'held for an operator: x' } }]);
  });

  test('transient failures: the retry is planned as before (looked up first) and carries the claim; past the budget: signal fail, completeRecord(failed)', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
    expect(run.throw(new Error('provider 503')).value).toEqual({ call: 'timer', arg: START_MS + 10_000 });
    clock.now = START_MS + 10_000;
    expect(run.next().value).toMatchObject({ call: 'activity:chargeAndRecord', arg: { lookUpFirst: true, recordClaim: claim } });
    for (const delay of [20_000, 25_000]) {
      expect(run.throw(new Error('provider 503')).value).toMatchObject({ call: 'timer' });
      clock.advance(delay);
      run.next();
    }
    const record = run.throw(new Error('provider timed out')).value as Task;
    expect(record).toMatchObject({ call: 'activity:completeRecord', arg: { claim, result: { status: 'failed' }, payment } });
    expect(signals).toEqual([{ entityKey: 'abc', operation: { name: 'fail', attempt: 3, reason: expect.stringMatching(/retry budget \(1 min, 4 rounds\)/) } }]);
    expect(run.next('completed').done).toBe(true);
  });

  test('an entity that already has a result: completeRecord with it, no charge, no signal', () => {
    const { calls, value } = drive(chargeOrchestration(input, steps), [{ decision: 'alreadyCompleted', result: charged }, 'completed']);
    expect(calls).toEqual(['entity:begin', 'activity:completeRecord']);
    expect(value).toEqual(charged);
    expect(signals).toEqual([]);
  });

  test('a run started before version 2 (no version in its input) replays the sequence its history holds: complete as a call, then completeRecord', () => {
    const { calls, value } = drive(chargeOrchestration(base, steps), [{ decision: 'proceed' }, charged, { decision: 'recorded' }, 'completed']);
    expect(calls).toEqual(['entity:begin', 'activity:chargeProvider', 'entity:complete', 'activity:completeRecord']);
    expect(value).toEqual(charged);
    expect(signals).toEqual([]);
  });

  test('a host without the version 2 steps (the local executor) runs the version 1 sequence for a version 2 input', () => {
    const { calls } = drive(chargeOrchestration(input, v1Steps), [{ decision: 'proceed' }, charged, { decision: 'recorded' }, 'completed']);
    expect(calls).toEqual(['entity:begin', 'activity:chargeProvider', 'entity:complete', 'activity:completeRecord']);
  });

  test("a one-way complete(3) and a newer attempt's begin(4) reach the entity in either order (two runs: no order between them): never a second charge", () => {
    const inProgress3 = applyChargeOperation(undefined, { name: 'begin', attempt: 3 }, 1).state;
    // The signal first: begin(4) answers the result (the newer run writes the record from it, no provider call).
    const signalled = applyChargeOperation(inProgress3, { name: 'complete', attempt: 3, result: charged }, 2).state;
    expect(applyChargeOperation(signalled, { name: 'begin', attempt: 4 }, 3).reply).toEqual({ decision: 'alreadyCompleted', result: charged });
    // begin(4) first: the late signal is stale and changes nothing; begin(4) said uncertain, so the newer run looks before charging.
    const begun4 = applyChargeOperation(inProgress3, { name: 'begin', attempt: 4 }, 2);
    expect(begun4.reply).toEqual({ decision: 'proceed', uncertain: true });
    const late = applyChargeOperation(begun4.state, { name: 'complete', attempt: 3, result: charged }, 3);
    expect(late).toEqual({ state: begun4.state, reply: { decision: 'stale', currentAttempt: 4 } });
  });
});
