import type { ChargeOrchestrationInput, ChargeSteps, RetryBudget } from '../../src/payments/chargeOrchestration';
import type { Claim } from 'azure-functions-idempotency';
import type { ChargeResult } from '../../src/payments/schema';
import { FakeClock } from './tables';

/** What a step of the charge orchestration yields in these tests: the call it asks for, and its argument. */
export type Task = { call: string; arg: unknown };

/** Where the step-driven charge runs start their clock. */
export const START_MS = 1_000_000;

/**
 * The setup of a charge orchestration driven step by step (test/unit/*Orchestration.test.ts): `steps` that return
 * each call as a {@link Task} and read the time from `clock` (moved by the test), the payment pay-1 of 500 EUR, the
 * holding run's `input`, the `claim` a handoff run completes its record with, and the provider's `charged` answer.
 * `entityKeyInCall`: entity calls read `entity:<entityKey>:<operation>` rather than `entity:<operation>`.
 */
export function chargeStepsSetup({ entityKeyInCall = false } = {}) {
  const clock = new FakeClock(START_MS);
  const steps: ChargeSteps<Task> = {
    callEntity: (entityKey, operation) => ({ call: entityKeyInCall ? `entity:${entityKey}:${operation.name}` : `entity:${operation.name}`, arg: operation }),
    chargeProvider: (input) => ({ call: 'activity:chargeProvider', arg: input }),
    completeRecord: (input) => ({ call: 'activity:completeRecord', arg: input }),
    timer: (atMs) => ({ call: 'timer', arg: atMs }),
    nowMs: () => clock.now,
  };
  const claim: Claim = {
    key: { consumer: 'payments', key: 'pay-1' },
    recordId: 'r1',
    digest: 'd1',
    attempt: 3,
    ownerId: 'o1',
    leaseExpiresAtMs: 0,
    createdAtMs: 5,
    localRows: ['payment'],
    etag: 'e1',
  };
  const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 500, currency: 'EUR' };
  const input: ChargeOrchestrationInput = { idempotencyKey: 'pay-1', entityKey: 'abc', attempt: 3, payment };
  /** The same payment in the handoff design: the run owns the record of `claim` and retries within `retry`. */
  const handoffInput = (retry: RetryBudget): ChargeOrchestrationInput => ({ ...input, handoff: { claim, retry } });
  const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_9', amount: 500, currency: 'EUR' };
  return { clock, steps, claim, payment, input, handoffInput, charged };
}
