import { IdempotencyError, type Claim } from 'azure-functions-idempotency';
import type { ChargeEntityOperation, ChargeEntityReply } from './chargeEntity';
import type { CompleteRecordInput, RecordedCharge } from './completeRecord';
import type { ChargeResult } from './schema';
import { PROVIDER_RETRY } from './chargePatience';
import { writeRecordWithin, RECORD_WRITE_RETRY, type RecordWriteCarry } from './recordWriteRetry';
import { HANDOFF_VERSION, rolloverOf, type HandOffPlan } from './handOffPlan';
import type { ChargeActivityInput, ChargeOrchestrationInput } from './chargeInputs';
import { chargeWithinBudget, providerCall } from './providerRounds';

export { HANDOFF_VERSION, handOffPlan, type HandOffPlan } from './handOffPlan';
export type { ChargeActivityInput, ChargeOrchestrationInput, ProviderRetry } from './chargeInputs';
export { RECORD_WRITE_RETRY, RecordWriteBudgetError, retryDelayMs, type RetryBudget } from './recordWriteRetry';

/**
 * The steps an orchestration can take, as tasks to `yield`. In Azure they are `context.df.callEntity`,
 * `context.df.callActivity` (the provider and the record write: the run retries both itself, on durable timers)
 * and `createTimer`; tests and the local executor supply their own. The yielded task's value (or error) is sent
 * back into the generator.
 */
export interface ChargeSteps<Task> {
  callEntity(entityKey: string, operation: ChargeEntityOperation): Task;
  /**
   * One provider call (an activity, at-least-once; not retried by the engine: the engine's retry re-sends the first
   * input, and a retry must look up first, so the run retries with a new call and a timer).
   */
  chargeProvider(input: ChargeActivityInput): Task;
  /** Handoff: completes the dedup record and the Payment row in one transaction (an activity). */
  readonly completeRecord?: (input: CompleteRecordInput) => Task;
  /**
   * Handoff version 2: one provider call as `chargeProvider`, then ONE try of the record write with `claim` in the same
   * activity; answers a {@link RecordedCharge}. Absent (the local executor): the run takes the version 1 sequence.
   */
  readonly chargeAndRecord?: (input: ChargeActivityInput, claim: Claim) => Task;
  /** A one-way entity operation (`signalEntity`: no answer, nothing yielded; ordered per entity from one run). */
  readonly signalEntity?: (entityKey: string, operation: ChargeEntityOperation) => void;
  /** A durable timer firing at `atMs` (epoch ms): between provider retries (both designs). */
  readonly timer?: (atMs: number) => Task;
  /** The orchestration's deterministic time (`currentUtcDateTime`), epoch ms. */
  readonly nowMs?: () => number;
  /** Restarts the run with a new input and an empty history (`context.df.continueAsNew`); the run returns right after. */
  readonly continueAsNew?: (input: ChargeOrchestrationInput) => void;
}

/** The entity's `begin` said an earlier attempt may have called the provider. */
function uncertainOf(begin: ChargeEntityReply): boolean {
  return begin.decision === 'proceed' && begin.uncertain === true;
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
 * a result for is never charged again: its result is returned. Holding design: a failed provider call
 * is retried by the run (`PROVIDER_RETRY`: durable timers 2, 4, 8, 16 s, 5 calls), each retry planned by
 * `planProviderCall` (re-sent with the key, looked up first, or held for an operator).
 * @throws the provider activity's last error after recording `fail` (the message will be redelivered).
 */
export function* chargeOrchestration<Task>(input: ChargeOrchestrationInput, steps: ChargeSteps<Task>): Generator<Task, ChargeResult, unknown> {
  if (input.handoff) return yield* handOffOrchestration(input, input.handoff, steps);
  const { entityKey, attempt } = input;
  const begin = (yield steps.callEntity(entityKey, { name: 'begin', attempt })) as ChargeEntityReply;
  if (begin.decision === 'alreadyCompleted') return begin.result;
  if (begin.decision === 'stale') throw new StaleAttemptError(attempt, begin.currentAttempt);

  let result: ChargeResult;
  try {
    result = yield* chargeWithRetries(input, steps, uncertainOf(begin));
  } catch (error) {
    yield steps.callEntity(entityKey, { name: 'fail', attempt, reason: error instanceof Error ? error.message : String(error) });
    throw error;
  }
  if (result.status === 'failed') {
    // Held for an operator: the entity stays open (failed) for the operator's retry.
    yield steps.callEntity(entityKey, { name: 'fail', attempt, reason: result.reason });
    return result;
  }

  const recorded = (yield steps.callEntity(entityKey, { name: 'complete', attempt, result })) as ChargeEntityReply;
  if (recorded.decision === 'alreadyCompleted') return recorded.result;
  if (recorded.decision === 'stale') throw new StaleAttemptError(attempt, recorded.currentAttempt);
  return result;
}

/** Holding design: provider calls as `PROVIDER_RETRY` says (the patience arithmetic counts them); the last error is thrown. */
function* chargeWithRetries<Task>(input: ChargeOrchestrationInput, steps: ChargeSteps<Task>, entityUncertain: boolean): Generator<Task, ChargeResult, unknown> {
  const { firstRetryIntervalMs, maxNumberOfAttempts, backoffCoefficient } = input.providerRetry ?? PROVIDER_RETRY;
  const startedMs = steps.nowMs?.() ?? 0;
  for (let round = 0; ; round++) {
    try {
      return (yield steps.chargeProvider(providerCall(input, round, entityUncertain, (steps.nowMs?.() ?? 0) - startedMs))) as ChargeResult;
    } catch (error) {
      if (round + 1 >= maxNumberOfAttempts) throw error;
      const { timer, nowMs } = steps;
      if (!timer || !nowMs) throw new Error('the charge needs the timer and nowMs steps to retry the provider', { cause: error });
      yield timer(nowMs() + firstRetryIntervalMs * backoffCoefficient ** round);
    }
  }
}

/**
 * The charge run of the handoff design; it owns the record once the delivery started it. Version 2:
 *
 * ```
 * begin(a) --proceed--> provider + record write (one activity) --> signal complete(a, r) / fail(a, why) --> r
 *    |                     | transient: durable timer (first, doubling, capped), again while within the budget
 *    |                     |   (each retry, and a first call after an uncertain begin: re-sent within the provider's key
 *    |                     |    memory, else looked up first, else held for an operator: planProviderCall)
 *    |                     |   budget spent: signal fail(a, why) --> completeRecord(claim a, failed) --> failed
 *    |                     '--the record write did not land (store down): completeRecord(claim a, r) on timers
 *    '--alreadyCompleted(r)--> completeRecord(claim a, r) --> r     (a retried run: never a second charge)
 *    '--stale--> StaleAttemptError (a newer attempt's run owns the record; nothing written)
 * ```
 * The record is written before the entity hears the result: nothing starts a run for a record that is completed, so
 * no `begin` can read the entity in between (docs/DESIGN.md). A write `fenced` (a newer attempt took the record over)
 * is left alone; the run returns its provider answer, and the record holds the newer attempt's. Version 1 (runs whose
 * history has it): `complete(a, r)` as a call (its `alreadyCompleted` answer wins), then `completeRecord`.
 * completeRecord that fails (the store is down) is called again on durable timers for days (`recordRetry`); every
 * `recordRoundsPerExecution` tries the run continues as new with the write's position (`recordWrite`), so its history
 * stays bounded however long the store is away.
 * @throws StaleAttemptError when the entity has a newer attempt on record.
 */
export function* handOffOrchestration<Task>(
  input: ChargeOrchestrationInput,
  plan: HandOffPlan,
  steps: ChargeSteps<Task>,
): Generator<Task, ChargeResult, unknown> {
  const { completeRecord, timer, nowMs, chargeAndRecord, signalEntity } = steps;
  if (!completeRecord || !timer || !nowMs) throw new Error('the handoff charge needs the completeRecord, timer and nowMs steps');
  const { entityKey, attempt } = input;
  const write = (result: ChargeResult, from?: RecordWriteCarry) =>
    writeRecordWithin(
      () => completeRecord({ claim: plan.claim, result, payment: input.payment }),
      plan.recordRetry ?? RECORD_WRITE_RETRY,
      nowMs,
      timer,
      from,
      rolloverOf(input, plan, steps.continueAsNew, result),
    );
  if (input.recordWrite) {
    // A run continued as new in its record write: the charge is behind it, only the write is left.
    yield* write(input.recordWrite.result, input.recordWrite);
    return input.recordWrite.result;
  }
  // One run per claim: the claim's owner id names this run to the entity, so a begin it sends again gets its first answer.
  const runKey = plan.version === HANDOFF_VERSION ? `${plan.claim.ownerId}#${attempt}` : undefined;
  const begin = (yield steps.callEntity(entityKey, { name: 'begin', attempt, ...(runKey ? { runKey } : {}) })) as ChargeEntityReply;
  if (begin.decision === 'stale') throw new StaleAttemptError(attempt, begin.currentAttempt);
  let result: ChargeResult;
  let written = false;
  if (begin.decision === 'alreadyCompleted') result = begin.result;
  else if (plan.version === HANDOFF_VERSION && chargeAndRecord && signalEntity) {
    const call = (activityInput: ChargeActivityInput) => chargeAndRecord(activityInput, plan.claim);
    const charged = yield* chargeWithinBudget(
      input,
      plan.retry,
      call,
      (answer) => answer as RecordedCharge,
      nowMs,
      timer,
      uncertainOf(begin),
      plan.settleUncertain,
      plan.settleTries,
    );
    result = charged.result;
    written = charged.record === 'completed' || charged.record === 'fenced';
    signalEntity(entityKey, result.status === 'failed' ? { name: 'fail', attempt, reason: result.reason } : { name: 'complete', attempt, result });
  } else {
    const charged = (yield* chargeWithinBudget(
      input,
      plan.retry,
      (activityInput) => steps.chargeProvider(activityInput),
      (answer) => ({ result: answer as ChargeResult }),
      nowMs,
      timer,
      uncertainOf(begin),
      plan.settleUncertain,
      plan.settleTries,
    )).result;
    if (charged.status === 'failed') {
      yield steps.callEntity(entityKey, { name: 'fail', attempt, reason: charged.reason });
      result = charged;
    } else {
      const recorded = (yield steps.callEntity(entityKey, { name: 'complete', attempt, result: charged })) as ChargeEntityReply;
      if (recorded.decision === 'stale') throw new StaleAttemptError(attempt, recorded.currentAttempt);
      result = recorded.decision === 'alreadyCompleted' ? recorded.result : charged;
    }
  }
  if (!written) yield* write(result);
  return result;
}
