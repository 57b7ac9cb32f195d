import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../../src/payments/chargeEntity';
import type { ChargeResult } from '../../src/payments/schema';

const NOW = 1_800_000_000_000;
const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_1', amount: 100, currency: 'EUR' };
const other: ChargeResult = { status: 'succeeded', chargeId: 'ch_2', amount: 100, currency: 'EUR' };

const states: Record<string, ChargeEntityState | undefined> = {
  unset: undefined,
  idle: { status: 'idle' },
  inProgress2: { status: 'inProgress', attempt: 2, startedAtMs: 1 },
  failed2: { status: 'failed', attempt: 2, reason: 'timeout', failedAtMs: 1 },
  completed2: { status: 'completed', attempt: 2, result: charged, completedAtMs: 1 },
};
const ops = (attempt: number): ChargeEntityOperation[] => [
  { name: 'begin', attempt },
  { name: 'complete', attempt, result: other },
  { name: 'fail', attempt, reason: 'boom' },
];

describe('paymentCharge entity: every operation in every state', () => {
  test.each(Object.keys(states))('state %s: get returns the state unchanged', (name) => {
    const { state, reply } = applyChargeOperation(states[name], { name: 'get' }, NOW);
    expect(state).toEqual(states[name] ?? { status: 'idle' });
    expect(reply).toEqual({ decision: 'state', state });
  });

  test.each(['unset', 'idle'])('state %s: begin proceeds, complete records, fail records (any attempt)', (name) => {
    expect(applyChargeOperation(states[name], { name: 'begin', attempt: 1 }, NOW)).toEqual({
      state: { status: 'inProgress', attempt: 1, startedAtMs: NOW },
      reply: { decision: 'proceed' },
    });
    expect(applyChargeOperation(states[name], { name: 'complete', attempt: 1, result: charged }, NOW)).toEqual({
      state: { status: 'completed', attempt: 1, result: charged, completedAtMs: NOW },
      reply: { decision: 'recorded' },
    });
    expect(applyChargeOperation(states[name], { name: 'fail', attempt: 1, reason: 'x' }, NOW).state).toMatchObject({ status: 'failed', attempt: 1 });
  });

  test.each(['unset', 'idle'])(
    'state %s (purged, or never written): begin for attempt > 1 (a takeover, a retry, the reconciler) proceeds uncertain: an earlier attempt may have charged',
    (name) => {
      for (const attempt of [2, 7]) {
        expect(applyChargeOperation(states[name], { name: 'begin', attempt }, NOW)).toEqual({
          state: { status: 'inProgress', attempt, startedAtMs: NOW },
          reply: { decision: 'proceed', uncertain: true },
        });
      }
    },
  );

  test.each(['inProgress2', 'failed2'])('state %s: every operation from an older attempt is rejected as stale', (name) => {
    for (const operation of ops(1)) {
      const { state, reply } = applyChargeOperation(states[name], operation, NOW);
      expect(reply).toEqual({ decision: 'stale', currentAttempt: 2 });
      expect(state).toBe(states[name]);
    }
  });

  test.each(['inProgress2', 'failed2'])(
    'state %s: the same or a newer attempt may begin again (uncertain: an earlier run may have charged), complete or fail',
    (name) => {
      for (const attempt of [2, 3]) {
        expect(applyChargeOperation(states[name], { name: 'begin', attempt }, NOW)).toEqual({
          state: { status: 'inProgress', attempt, startedAtMs: NOW },
          reply: { decision: 'proceed', uncertain: true },
        });
        expect(applyChargeOperation(states[name], { name: 'complete', attempt, result: charged }, NOW).state).toMatchObject({
          status: 'completed',
          result: charged,
        });
        expect(applyChargeOperation(states[name], { name: 'fail', attempt, reason: 'r' }, NOW).state).toMatchObject({ status: 'failed', attempt });
      }
    },
  );

  test('state completed: final; every operation of any attempt gets the first result and changes nothing', () => {
    for (const attempt of [1, 2, 3]) {
      for (const operation of ops(attempt)) {
        const { state, reply } = applyChargeOperation(states.completed2, operation, NOW);
        expect(reply).toEqual({ decision: 'alreadyCompleted', result: charged });
        expect(state).toBe(states.completed2);
      }
    }
  });
});

describe('paymentCharge entity: a begin the same run sends again', () => {
  // A re-run episode re-sends what the crashed one sent, with a new request id (from its own currentUtcDateTime): the
  // entity cannot drop it as a duplicate, so its answer must not depend on being asked twice.
  test('the same run (runKey) asking again gets its first answer and changes nothing; another run, or one without a key, is uncertain', () => {
    const first = applyChargeOperation(undefined, { name: 'begin', attempt: 1, runKey: 'owner-a#1' }, NOW);
    expect(first.reply).toEqual({ decision: 'proceed' });
    const again = applyChargeOperation(first.state, { name: 'begin', attempt: 1, runKey: 'owner-a#1' }, NOW + 60_000);
    expect(again).toEqual({ state: first.state, reply: { decision: 'proceed' } });
    // Another run under the same attempt (none should exist, one run per claim) or a run of another claim: uncertain.
    expect(applyChargeOperation(first.state, { name: 'begin', attempt: 1, runKey: 'owner-b#1' }, NOW).reply).toEqual({ decision: 'proceed', uncertain: true });
    expect(applyChargeOperation(first.state, { name: 'begin', attempt: 1 }, NOW).reply).toEqual({ decision: 'proceed', uncertain: true });
    // A newer attempt's run is uncertain, and asked again it stays uncertain (its first answer).
    const takeover = applyChargeOperation(first.state, { name: 'begin', attempt: 2, runKey: 'owner-c#2' }, NOW);
    expect(takeover.reply).toEqual({ decision: 'proceed', uncertain: true });
    expect(applyChargeOperation(takeover.state, { name: 'begin', attempt: 2, runKey: 'owner-c#2' }, NOW).reply).toEqual({
      decision: 'proceed',
      uncertain: true,
    });
    // Once the run failed, its own begin again is a new begin (uncertain: it may have called).
    const failed = applyChargeOperation(first.state, { name: 'fail', attempt: 1, reason: 'x' }, NOW);
    expect(applyChargeOperation(failed.state, { name: 'begin', attempt: 1, runKey: 'owner-a#1' }, NOW).reply).toEqual({ decision: 'proceed', uncertain: true });
  });
});

describe('paymentCharge entity: a later attempt and a long reason', () => {
  test("a begin under the same run key but a later attempt is a new begin, not the same run's begin again", () => {
    const first = applyChargeOperation(undefined, { name: 'begin', attempt: 1, runKey: 'o1#1' }, 10).state;
    const later = applyChargeOperation(first, { name: 'begin', attempt: 2, runKey: 'o1#1' }, 20);
    expect(later.state).toEqual({ status: 'inProgress', attempt: 2, startedAtMs: 20, runKey: 'o1#1', uncertain: true });
    expect(later.reply).toEqual({ decision: 'proceed', uncertain: true });
  });

  test("a fail's reason is kept to 500 characters", () => {
    const begun = applyChargeOperation(undefined, { name: 'begin', attempt: 1 }, 10).state;
    const failed = applyChargeOperation(begun, { name: 'fail', attempt: 1, reason: 'r'.repeat(800) }, 20).state;
    expect(failed).toEqual({ status: 'failed', attempt: 1, reason: 'r'.repeat(500), failedAtMs: 20 });
  });
});
