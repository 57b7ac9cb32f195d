import { IdempotencyError } from 'azure-functions-idempotency/internal';
import type { ChargeEntityOperation, ChargeEntityReply } from './chargeEntity';
import type { CompleteRecordInput } from './completeRecord';
import type { Claim } from 'azure-functions-idempotency';
import type { ChargeResult, PaymentRequested } from './schema';
import { PROVIDER_RETRY } from './chargePatience';
import { shouldLookUp, type ProviderLookupMode } from './providerLookup';

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
  /**
   * Handoff design (docs/DESIGN.md "Payments: hand off, don't hold"): the run owns the record. It retries
   * transient provider failures with durable timers for the plan's budget and completes the dedup record
   * itself (fenced by the claim's attempt). Absent: the holding design (the delivery waits and completes it).
   */
  readonly handoff?: HandOffPlan;
  /**
   * `PAYMENT_PROVIDER_LOOKUP` as the delivery read it from its settings (src/payments/providerLookup.ts): which provider
   * calls of this run look up the charge under the key first. Carried in the input so that a replay decides the same
   * way whatever the worker's settings; absent (runs started before the setting existed): `uncertain`.
   */
  readonly providerLookup?: ProviderLookupMode;
  /**
   * Holding design: the run's provider retries instead of `PROVIDER_RETRY` (which the deliveries' patience counts:
   * chargePatience.ts). Only the local executor's tests set it (short intervals); the app never does.
   */
  readonly providerRetry?: ProviderRetry;
}

/** Provider calls of a holding run: `maxNumberOfAttempts` in all, the first retry after `firstRetryIntervalMs`, times `backoffCoefficient` each. */
export interface ProviderRetry {
  readonly firstRetryIntervalMs: number;
  readonly maxNumberOfAttempts: number;
  readonly backoffCoefficient: number;
}

export interface ChargeActivityInput {
  readonly idempotencyKey: string;
  readonly payment: PaymentRequested;
  readonly correlationId?: string;
  /** Look up the charge made under the key first and return it without charging (an earlier call may have charged). */
  readonly lookUpFirst?: boolean;
}

/**
 * The steps an orchestration can take, as tasks to `yield`. In Azure they are `context.df.callEntity`,
 * `context.df.callActivity` (the provider: the run retries it itself), `callActivityWithRetry` (the record write)
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
  /** A durable timer firing at `atMs` (epoch ms): between provider retries (both designs). */
  readonly timer?: (atMs: number) => Task;
  /** The orchestration's deterministic time (`currentUtcDateTime`), epoch ms. */
  readonly nowMs?: () => number;
}

/** The provider activity's input for retry round `round` of a run: `lookUpFirst` per {@link shouldLookUp}. */
function providerCall(input: ChargeOrchestrationInput, round: number, entityUncertain: boolean): ChargeActivityInput {
  const lookUpFirst = shouldLookUp(input.providerLookup ?? 'uncertain', { round, entityUncertain });
  return {
    idempotencyKey: input.idempotencyKey,
    payment: input.payment,
    correlationId: input.correlationId,
    ...(lookUpFirst ? { lookUpFirst: true } : {}),
  };
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
 * is retried by the run (`PROVIDER_RETRY`: durable timers 2, 4, 8, 16 s, 5 calls), each retry looking up
 * first per `providerLookup`.
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

  const recorded = (yield steps.callEntity(entityKey, { name: 'complete', attempt, result })) as ChargeEntityReply;
  if (recorded.decision === 'alreadyCompleted') return recorded.result;
  if (recorded.decision === 'stale') throw new StaleAttemptError(attempt, recorded.currentAttempt);
  return result;
}

/** Holding design: provider calls as `PROVIDER_RETRY` says (the patience arithmetic counts them); the last error is thrown. */
function* chargeWithRetries<Task>(input: ChargeOrchestrationInput, steps: ChargeSteps<Task>, entityUncertain: boolean): Generator<Task, ChargeResult, unknown> {
  const { firstRetryIntervalMs, maxNumberOfAttempts, backoffCoefficient } = input.providerRetry ?? PROVIDER_RETRY;
  for (let round = 0; ; round++) {
    try {
      return (yield steps.chargeProvider(providerCall(input, round, entityUncertain))) as ChargeResult;
    } catch (error) {
      if (round + 1 >= maxNumberOfAttempts) throw error;
      const { timer, nowMs } = steps;
      if (!timer || !nowMs) throw new Error('the charge needs the timer and nowMs steps to retry the provider', { cause: error });
      yield timer(nowMs() + firstRetryIntervalMs * backoffCoefficient ** round);
    }
  }
}

/** How a handoff run retries transient provider failures: durable timers, doubling, within a budget. */
export interface RetryBudget {
  /** Total time from the first provider call after which no new round starts (`PAYMENT_RETRY_BUDGET_MINUTES`). */
  readonly budgetMs: number;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
}

/** What the delivery hands to the run: the claim it completes the record with, and the retry budget. */
export interface HandOffPlan {
  /** The claim that started this run: its attempt fences the record write (`completeRecord`). */
  readonly claim: Claim;
  readonly retry: RetryBudget;
}

/** The delay before retry round `round + 1` (0-based): first, doubling, capped. */
export function retryDelayMs(retry: RetryBudget, round: number): number {
  return Math.min(retry.maxDelayMs, retry.firstDelayMs * 2 ** Math.min(round, 30));
}

/**
 * The charge run of the handoff design; it owns the record once the delivery started it:
 *
 * ```
 * begin(a) --proceed--> provider --ok--> complete(a, r) --> completeRecord(claim a, r) --> r
 *    |                     | transient: durable timer (first, doubling, capped), again while within the budget
 *    |                     |   (each retry, and a first call after an uncertain begin, looks up first per providerLookup)
 *    |                     '--budget spent--> fail(a, why) --> completeRecord(claim a, failed) --> failed
 *    '--alreadyCompleted(r)--> completeRecord(claim a, r) --> r     (a retried run: never a second charge)
 *    '--stale--> StaleAttemptError (a newer attempt's run owns the record; nothing written)
 * ```
 * @throws StaleAttemptError when the entity has a newer attempt on record.
 */
export function* handOffOrchestration<Task>(
  input: ChargeOrchestrationInput,
  plan: HandOffPlan,
  steps: ChargeSteps<Task>,
): Generator<Task, ChargeResult, unknown> {
  const { completeRecord, timer, nowMs } = steps;
  if (!completeRecord || !timer || !nowMs) throw new Error('the handoff charge needs the completeRecord, timer and nowMs steps');
  const { entityKey, attempt } = input;
  const begin = (yield steps.callEntity(entityKey, { name: 'begin', attempt })) as ChargeEntityReply;
  if (begin.decision === 'stale') throw new StaleAttemptError(attempt, begin.currentAttempt);
  let result: ChargeResult;
  if (begin.decision === 'alreadyCompleted') result = begin.result;
  else {
    const charged = yield* chargeWithinBudget(input, plan.retry, steps, nowMs, timer, uncertainOf(begin));
    if (charged.status === 'failed') {
      yield steps.callEntity(entityKey, { name: 'fail', attempt, reason: charged.reason });
      result = charged;
    } else {
      const recorded = (yield steps.callEntity(entityKey, { name: 'complete', attempt, result: charged })) as ChargeEntityReply;
      if (recorded.decision === 'stale') throw new StaleAttemptError(attempt, recorded.currentAttempt);
      result = recorded.decision === 'alreadyCompleted' ? recorded.result : charged;
    }
  }
  yield completeRecord({ claim: plan.claim, result, payment: input.payment });
  return result;
}

/** Provider calls until one answers, or until the next retry would start past the budget (then `failed`). */
function* chargeWithinBudget<Task>(
  input: ChargeOrchestrationInput,
  retry: RetryBudget,
  steps: ChargeSteps<Task>,
  nowMs: () => number,
  timer: (atMs: number) => Task,
  entityUncertain: boolean,
): Generator<Task, ChargeResult, unknown> {
  const startedMs = nowMs();
  for (let round = 0; ; round++) {
    try {
      return (yield steps.chargeProvider(providerCall(input, round, entityUncertain))) as ChargeResult;
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      const next = nowMs() + retryDelayMs(retry, round);
      if (next - startedMs > retry.budgetMs) {
        const minutes = Math.round((retry.budgetMs / 60_000) * 100) / 100;
        return {
          status: 'failed',
          reason: `provider failed transiently for the whole retry budget (${minutes} min, ${round + 1} rounds): ${why}`.slice(0, 500),
        };
      }
      yield timer(next);
    }
  }
}
