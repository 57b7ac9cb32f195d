import { chargeOrchestration, StaleAttemptError, type ChargeOrchestrationInput, type ChargeSteps } from '../../src/payments/chargeOrchestration';
import type { ChargeResult } from '../../src/payments/schema';

type Task = { call: string; arg: unknown };
const steps: ChargeSteps<Task> = {
  callEntity: (entityKey, operation) => ({ call: `entity:${entityKey}:${operation.name}`, arg: operation }),
  chargeProvider: (input) => ({ call: 'activity:chargeProvider', arg: input }),
};
const input: ChargeOrchestrationInput = {
  idempotencyKey: 'pay-1',
  entityKey: 'abc',
  attempt: 3,
  payment: { paymentId: 'pay-1', customerId: 'c1', amount: 500, currency: 'EUR' },
};
const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_9', amount: 500, currency: 'EUR' };

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

  test('a failed provider call records fail on the entity, then fails the run', () => {
    const run = chargeOrchestration(input, steps);
    run.next();
    run.next({ decision: 'proceed' });
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
