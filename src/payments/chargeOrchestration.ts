import { IdempotencyError } from '../core/errors';
import type { ChargeEntityOperation, ChargeEntityReply } from './chargeEntity';
import type { ChargeResult, PaymentRequested } from './schema';

/** Input of one orchestration run: everything the run needs, nothing of the message but the payment. */
export interface ChargeOrchestrationInput {
  /** Sent to the provider as `Idempotency-Key` (the paymentId, the same on every call for this payment). */
  readonly idempotencyKey: string;
  /** Key of the `paymentCharge` entity: one per record lifetime and payload (`chargeEntityKey`, a hash: always a valid entity key). */
  readonly entityKey: string;
  /** Digest of the payment this run was started for (the run answers only that payload). */
  readonly digest?: string;
  /** Fencing number of the claim that started this run. */
  readonly attempt: number;
  readonly payment: PaymentRequested;
  /** The message's correlation id, passed on to the provider for end-to-end tracing. */
  readonly correlationId?: string;
}

export interface ChargeActivityInput {
  readonly idempotencyKey: string;
  readonly payment: PaymentRequested;
  readonly correlationId?: string;
}

/**
 * The steps an orchestration can take, as tasks to `yield`. In Azure they are
 * `context.df.callEntity` and `context.df.callActivityWithRetry`; tests and the local executor
 * supply their own. The yielded task's value (or error) is sent back into the generator.
 */
export interface ChargeSteps<Task> {
  callEntity(entityKey: string, operation: ChargeEntityOperation): Task;
  /** Calls the provider (an activity: at-least-once, retried on transient failures). */
  chargeProvider(input: ChargeActivityInput): Task;
}

/**
 * The run was started by an attempt older than the one the entity has on record. Not retryable:
 * this run can never succeed (the delivery holding the newer claim finishes the charge).
 */
export class StaleAttemptError extends IdempotencyError {
  constructor(
    readonly attempt: number,
    readonly currentAttempt: number,
  ) {
    super(`charge attempt ${attempt} is stale: attempt ${currentAttempt} is on record`, { retryable: false });
  }
}

/**
 * The charge orchestration: entity `begin` (records in progress) -> provider call with the
 * payment's `Idempotency-Key` -> entity `complete` (or `fail`). A payment the entity already has
 * a result for is never charged again: its result is returned.
 * @throws the provider activity's error after recording `fail` (the message will be redelivered).
 */
export function* chargeOrchestration<Task>(input: ChargeOrchestrationInput, steps: ChargeSteps<Task>): Generator<Task, ChargeResult, unknown> {
  const { entityKey, attempt } = input;
  const begin = (yield steps.callEntity(entityKey, { name: 'begin', attempt })) as ChargeEntityReply;
  if (begin.decision === 'alreadyCompleted') return begin.result;
  if (begin.decision === 'stale') throw new StaleAttemptError(attempt, begin.currentAttempt);

  let result: ChargeResult;
  try {
    result = (yield steps.chargeProvider({ idempotencyKey: input.idempotencyKey, payment: input.payment, correlationId: input.correlationId })) as ChargeResult;
  } catch (error) {
    yield steps.callEntity(entityKey, { name: 'fail', attempt, reason: error instanceof Error ? error.message : String(error) });
    throw error;
  }

  const recorded = (yield steps.callEntity(entityKey, { name: 'complete', attempt, result })) as ChargeEntityReply;
  if (recorded.decision === 'alreadyCompleted') return recorded.result;
  if (recorded.decision === 'stale') throw new StaleAttemptError(attempt, recorded.currentAttempt);
  return result;
}
