import { IdempotencyError, type Claim } from 'azure-functions-idempotency';
import type { ChargeEntityOperation, ChargeEntityReply } from './chargeEntity';
import type { CompleteRecordInput, RecordedCharge } from './completeRecord';
import type { ChargeResult, PaymentRequested } from './schema';
import { PROVIDER_RETRY } from './chargePatience';
import { keyMemoryGuardOf, planProviderCall, type KeyMemoryGuard, type LegacyLookupMode, type ProviderCapability } from './providerLookup';
import { retryDelayMs, writeRecordWithin, RECORD_WRITE_RETRY, type RecordWriteCarry, type RetryBudget } from './recordWriteRetry';
import { FENCE_OPEN_FOR_MS, HANDOFF_VERSION, rolloverOf, type HandOffPlan } from './handOffPlan';

export { HANDOFF_VERSION, handOffPlan, type HandOffPlan } from './handOffPlan';
export { RECORD_WRITE_RETRY, RecordWriteBudgetError, retryDelayMs, type RetryBudget } from './recordWriteRetry';

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
   * The provider's declared capability (`PAYMENT_PROVIDER_LOOKUP`, `PAYMENT_PROVIDER_KEY_MEMORY_HOURS`) as the starter
   * read it (src/payments/providerLookup.ts): a replay decides the same way whatever the worker's settings.
   */
  readonly provider?: ProviderCapability;
  /** The key's age when the run was started (starter's clock - the record's creation); the run adds its own elapsed time. */
  readonly keyAgeAtStartMs?: number;
  /** Runs started before `provider` existed: the old when-to-look mode (absent too: `uncertain`). */
  readonly providerLookup?: LegacyLookupMode;
  /**
   * Holding design: the run's provider retries instead of `PROVIDER_RETRY` (which the deliveries' patience counts:
   * chargePatience.ts). Only the local executor's tests set it (short intervals); the app never does.
   */
  readonly providerRetry?: ProviderRetry;
  /**
   * A handoff run continued as new in its record write (`continueAsNew`, history bounded): the write's position. The
   * run goes straight back to writing `result` (no entity, no provider).
   */
  readonly recordWrite?: RecordWriteCarry;
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
  /** Call nothing: hold the payment for an operator with this reason (answered `failed`, code `held-for-operator`). */
  readonly hold?: string;
  /**
   * The plan relied on the provider's key memory: the activity checks its own clock at the call and, past
   * `trustedUntilMs`, looks up first or holds instead (queue waits after the plan are unbounded: `KeyMemoryGuard`).
   */
  readonly keyMemory?: KeyMemoryGuard;
  /** Past this time (epoch ms), a fence that cannot read the record refuses the call ({@link FENCE_OPEN_FOR_MS}). */
  readonly fenceOpenUntilMs?: number;
}

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

/** The provider activity's input for retry round `round` of a run, `elapsedMs` into it: per {@link planProviderCall}. */
function providerCall(input: ChargeOrchestrationInput, round: number, entityUncertain: boolean, elapsedMs: number, nowMs?: number): ChargeActivityInput {
  const keyAgeMs = input.keyAgeAtStartMs === undefined ? undefined : input.keyAgeAtStartMs + elapsedMs;
  const capability = input.provider ?? input.providerLookup ?? 'uncertain';
  const lookupCase = { round, entityUncertain, keyAgeMs };
  const plan = planProviderCall(capability, lookupCase);
  // Runs started before the guard existed replay without it (their history's inputs stay as they were).
  const at = nowMs === undefined || input.handoff?.version !== HANDOFF_VERSION ? undefined : nowMs;
  const keyMemory = at === undefined ? undefined : keyMemoryGuardOf(capability, lookupCase, plan, at);
  return {
    idempotencyKey: input.idempotencyKey,
    payment: input.payment,
    correlationId: input.correlationId,
    ...(plan.action === 'lookUpFirst' ? { lookUpFirst: true } : {}),
    ...(plan.action === 'hold' ? { hold: plan.reason } : {}),
    ...(keyMemory ? { keyMemory } : {}),
    ...(at === undefined ? {} : { fenceOpenUntilMs: at + FENCE_OPEN_FOR_MS }),
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
  const begin = (yield steps.callEntity(entityKey, { name: 'begin', attempt })) as ChargeEntityReply;
  if (begin.decision === 'stale') throw new StaleAttemptError(attempt, begin.currentAttempt);
  let result: ChargeResult;
  let written = false;
  if (begin.decision === 'alreadyCompleted') result = begin.result;
  else if (plan.version === HANDOFF_VERSION && chargeAndRecord && signalEntity) {
    const call = (activityInput: ChargeActivityInput) => chargeAndRecord(activityInput, plan.claim);
    const charged = yield* chargeWithinBudget(input, plan.retry, call, (answer) => answer as RecordedCharge, nowMs, timer, uncertainOf(begin));
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

/** Provider calls until one answers, or until the next retry would start past the budget (then `failed`). */
function* chargeWithinBudget<Task>(
  input: ChargeOrchestrationInput,
  retry: RetryBudget,
  call: (activityInput: ChargeActivityInput) => Task,
  read: (answer: unknown) => RecordedCharge,
  nowMs: () => number,
  timer: (atMs: number) => Task,
  entityUncertain: boolean,
): Generator<Task, RecordedCharge, unknown> {
  const startedMs = nowMs();
  for (let round = 0; ; round++) {
    try {
      return read(yield call(providerCall(input, round, entityUncertain, nowMs() - startedMs, nowMs())));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      const next = nowMs() + retryDelayMs(retry, round);
      if (next - startedMs > retry.budgetMs) {
        const minutes = Math.round((retry.budgetMs / 60_000) * 100) / 100;
        const reason = `provider failed transiently for the whole retry budget (${minutes} min, ${round + 1} rounds): ${why}`.slice(0, 500);
        return { result: { status: 'failed', reason }, record: 'unwritten' };
      }
      yield timer(next);
    }
  }
}
