import * as df from 'durable-functions';
import type { ActivityHandler, EntityContext, OrchestrationContext } from 'durable-functions';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../payments/chargeEntity';
import { chargeOrchestration, type ChargeActivityInput, type ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import { chargeOnce, type HeldReporter } from '../payments/chargeOnce';
import { heldReporter } from '../payments/heldReporter';

export { atTheCall, chargeOnce, type HeldReporter } from '../payments/chargeOnce';
export { heldReporter } from '../payments/heldReporter';
export { mayHaveLanded, writeRecordOnce } from './recordWrite';
export { CallInFlightError, CallLeaseSpentError, FenceUnreadableError } from '../payments/callFence';
import type { PaymentProviderClient } from '../payments/PaymentProviderClient';
import { LeaseLostError, StoreUnavailableError, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import {
  afterHoldRefused,
  announceCall,
  assertNoCallInFlight,
  CallInFlightError,
  CallLeaseSpentError,
  readFence,
  readForSettle,
  writeHoldOnVersionRead,
} from '../payments/callFence';
import { HELD_FOR_OPERATOR } from '../payments/providerLookup';
import type { CompleteRecordInput, RecordedCharge } from '../payments/completeRecord';
import { mayHaveLanded, warnRecordWriteRetry, writeRecordOnce } from './recordWrite';
import { writeWhileCallLeased } from '../payments/recordWriteRetry';
import type { ChargeResult } from '../payments/schema';
import { Telemetry } from '../telemetry/Telemetry';

/**
 * The charge on Durable Functions: the orchestration, entity and activity bodies the registrations
 * (`src/functions/payments.ts`) name. The logic is in `src/payments` (pure, tested without the runtime).
 */

/** Function names, written once: the registrations and the calls between them use these. */
export const CHARGE_ORCHESTRATION = 'chargePayment';
export const CHARGE_ENTITY = 'paymentCharge';
export const CHARGE_ACTIVITY = 'chargeProvider';
/** Handoff design: the run's record write (dedup record + Payment row, one transaction, fenced by attempt). */
export const COMPLETE_RECORD_ACTIVITY = 'completePaymentRecord';

/** The `chargePayment` orchestrator: {@link chargeOrchestration} over the Durable context. */
export function* chargePaymentOrchestrator(context: OrchestrationContext): Generator<df.Task, unknown, unknown> {
  const input = context.df.getInput<ChargeOrchestrationInput>();
  return yield* chargeOrchestration<df.Task>(input, {
    callEntity: (entityKey, operation) => context.df.callEntity(new df.EntityId(CHARGE_ENTITY, entityKey), operation.name, operation),
    // A plain call: the run retries it (timers), so that a retry can look up first (an engine retry re-sends this input).
    chargeProvider: (activityInput) => context.df.callActivity(CHARGE_ACTIVITY, activityInput),
    // A plain call too: the run retries the record write on durable timers for days (RECORD_WRITE_RETRY), not 8 tries.
    completeRecord: (recordInput) => context.df.callActivity(COMPLETE_RECORD_ACTIVITY, recordInput),
    // Handoff version 2: the same activity writes the record once after the provider answered (one message pair fewer).
    chargeAndRecord: (activityInput, claim) =>
      context.df.callActivity(CHARGE_ACTIVITY, { ...activityInput, recordClaim: claim } satisfies ChargeAndRecordInput),
    // One-way: the run does not read the entity's answer to complete/fail (one message instead of a request and a reply).
    signalEntity: (entityKey, operation) => context.df.signalEntity(new df.EntityId(CHARGE_ENTITY, entityKey), operation.name, operation),
    timer: (atMs) => context.df.createTimer(new Date(atMs)),
    nowMs: () => context.df.currentUtcDateTime.getTime(),
    // The record write's rollover (a long store outage): a new execution with the write's position, the history cleared.
    continueAsNew: (next) => context.df.continueAsNew(next),
  });
}

/** The `paymentCharge` entity: {@link applyChargeOperation} over the entity's state. */
export function paymentChargeEntity(context: EntityContext<ChargeEntityState>): void {
  const operation = context.df.getInput<ChargeEntityOperation>() ?? ({ name: context.df.operationName } as ChargeEntityOperation);
  const applied = applyChargeOperation(context.df.getState(), operation, Date.now());
  context.df.setState(applied.state);
  context.df.return(applied.reply);
}

/** The `chargeProvider` activity's input in handoff version 2: the record write's claim rides along. */
export interface ChargeAndRecordInput extends ChargeActivityInput {
  /** Write the record (fenced by this claim's attempt) once after the provider answered; answer a `RecordedCharge`. */
  readonly recordClaim?: Claim;
}

/**
 * The `chargeProvider` activity: one provider call with the payment's `Idempotency-Key`; with `lookUpFirst`, the
 * charge made under the key is looked up first and returned without charging again when there is one; with `hold`,
 * nothing is called and the payment is held for an operator (counted, logged). With `recordClaim` (handoff version 2)
 * the call is first announced on the record (src/payments/callFence.ts: a record that moved on, or a store that cannot
 * take the mark, refuses it), and the answer, whatever it is, is then written to the record once
 * ({@link writeRecordOnce}, tried again while the call's lease runs); the activity answers a `RecordedCharge`: a store
 * that does not answer gives `unwritten` (the run retries the write on durable timers), never an error (an error would make the run call the provider again).
 * A settling call (`lookUpOnly`) looks up only once no announced call can be on its way, and writes "no charge found"
 * only on the version of the record it read (see {@link settle}).
 */
export function chargeProviderActivity(
  provider: PaymentProviderClient,
  telemetry: () => Telemetry = () => new Telemetry(),
  store?: () => IdempotencyStore,
  nowMs: () => number = Date.now,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): ActivityHandler {
  const report = heldReporter(telemetry);
  return async (input: unknown): Promise<ChargeResult | RecordedCharge> => {
    const activityInput = input as ChargeAndRecordInput;
    const claim = activityInput.recordClaim;
    if (claim && !store) throw new Error('chargeProvider: a run asked for the record write and the activity has no store');
    if (!claim || !store) return chargeOnce(provider, activityInput, report, nowMs);
    // A hold is reported once the record says so (an alert the record does not back would tell an operator of a
    // payment that a restart may still charge: simulator seed 533); until then the record-write alerts speak.
    let heldReason: string | undefined;
    // The lease an earlier announced call of the attempt left (ms), as the fence saw it: a hold is not written over it.
    let earlierCallLeftMs = 0;
    const deferred: HeldReporter = { held: (_input, reason) => void (heldReason = reason), lookupUnsupported: (...args) => report.lookupUnsupported(...args) };
    const recordOnce = async (recordClaim: Claim, result: ChargeResult): Promise<RecordedCharge> => {
      // A hold: exact, and never over a call that may still land (callFence.ts `assertNoCallInFlight`).
      const exact = heldReason !== undefined;
      if (exact && earlierCallLeftMs > 0) throw new CallInFlightError(earlierCallLeftMs);
      const recordInput: CompleteRecordInput = { claim: recordClaim, result, payment: activityInput.payment, ...(exact ? { exact } : {}) };
      try {
        // A provider's answer is tried again while the call's lease runs (it may exist nowhere else; warned once, when
        // left to the run); a hold, decided by the run, is not (a write that landed unanswered reads as refused).
        const record = exact
          ? await writeRecordOnce(store(), telemetry, recordInput)
          : await writeWhileCallLeased(
              () => writeRecordOnce(store(), telemetry, recordInput, false),
              () => recordClaim.leaseExpiresAtMs - nowMs(),
              sleep,
            );
        if (record === 'completed' && heldReason !== undefined) report.held(activityInput, heldReason);
        return { result, record };
      } catch (error) {
        if (exact && error instanceof LeaseLostError) return afterHoldRefused(store(), claim, nowMs());
        if (!exact && error instanceof StoreUnavailableError) warnRecordWriteRetry(telemetry, recordInput, error);
        if (mayHaveLanded(error) && heldReason !== undefined) report.held(activityInput, heldReason);
        return { result, record: 'unwritten' };
      }
    };
    let recordClaim = claim;
    let plan: ChargeActivityInput = activityInput;
    // The charge goes only while the call's lease covers it until it shows in a look-up (src/config/callTiming.ts): a
    // look-up that took long, or a mark that landed late, leaves too little; a settle would then look before it shows.
    const leased = leaseGuarded(provider, () => recordClaim, nowMs, activityInput.postWindowMs);
    const charge = () => chargeOnce(leased, plan, deferred, nowMs);
    if (activityInput.lookUpOnly) return settle(store(), telemetry, claim, nowMs, activityInput, charge, recordOnce);
    if (activityInput.hold) {
      // Nothing is called: the fence answers a record that moved on, and a call still on its way defers the hold (a
      // store that cannot say changes nothing: the write then fails too, or lands on the claim).
      const read = await readFence(store(), claim).catch(() => undefined);
      if (read && 'movedOn' in read) return read.movedOn;
      if (read) assertNoCallInFlight(claim, read.current, nowMs());
      if (read) recordClaim = read.current;
    } else {
      const announced = await announceCall(store(), claim, nowMs, activityInput.callLeaseMs, (earlierLeaseLeftMs) => {
        plan = asCalledAfter(activityInput, earlierLeaseLeftMs);
        earlierCallLeftMs = Math.max(0, earlierLeaseLeftMs ?? 0);
      });
      if ('movedOn' in announced) return announced.movedOn;
      recordClaim = announced.marked;
    }
    return recordOnce(recordClaim, await charge());
  };
}

/**
 * The call's plan given what the fence saw: a first call that finds an earlier call of its attempt announced (the
 * engine ran it again) is planned as a retry round (`ifRepeat`); a look-up that must see every earlier call is not
 * made while one's lease runs (its charge may not show yet): `CallInFlightError`, before anything is marked.
 */
function asCalledAfter(input: ChargeActivityInput, earlierLeaseLeftMs: number | undefined): ChargeActivityInput {
  if (earlierLeaseLeftMs === undefined) return input;
  const plan = input.ifRepeat && !input.mayRepeat && !input.lookUpOnly ? { ...input, ...input.ifRepeat } : input;
  if (plan.lookUpFirst && plan.lookUpSeesEarlierCalls && !plan.hold && earlierLeaseLeftMs > 0) throw new CallInFlightError(earlierLeaseLeftMs);
  return plan;
}

/**
 * The provider as one announced call may use it: the look-up as it is; the charge only while the claim's lease has at
 * least `postWindowMs` left ({@link CallLeaseSpentError} otherwise: nothing sent, the round fails and is retried).
 */
function leaseGuarded(
  provider: Pick<PaymentProviderClient, 'charge' | 'findCharge'>,
  claim: () => Claim,
  nowMs: () => number,
  postWindowMs: number | undefined,
): Pick<PaymentProviderClient, 'charge' | 'findCharge'> {
  return {
    findCharge: (key, correlationId, chargesFromMs) => provider.findCharge(key, correlationId, chargesFromMs),
    charge: (payment, key, correlationId, chargesFromMs) => {
      const leftMs = claim().leaseExpiresAtMs - nowMs();
      if (postWindowMs !== undefined && leftMs < postWindowMs) return Promise.reject(new CallLeaseSpentError(leftMs, postWindowMs));
      return provider.charge(payment, key, correlationId, chargesFromMs);
    },
  };
}

/**
 * The settling call of a run whose budget is spent: read the record (no call may still be announced: else
 * `CallInFlightError`), look the key's charge up, and record what it says. "No charge" is written only on the version
 * read (an exact completion): a call announced since then refuses it (`CallInFlightError`: the run settles again), and
 * a write that does not land is thrown, never answered `unwritten` (the run would write it unconditionally). A charge
 * found, or a hold (the look-up failed), is written as any answer is.
 * @throws CallInFlightError, or what the store throws (retryable: the run settles again after a while)
 */
async function settle(
  store: IdempotencyStore,
  telemetry: () => Telemetry,
  claim: Claim,
  nowMs: () => number,
  input: ChargeAndRecordInput,
  lookUp: () => Promise<ChargeResult>,
  recordOnce: (claim: Claim, result: ChargeResult) => Promise<RecordedCharge>,
): Promise<RecordedCharge> {
  const read = await readForSettle(store, claim, nowMs);
  if ('movedOn' in read) return read.movedOn;
  const result = await lookUp();
  if (result.status !== 'failed' || result.code === HELD_FOR_OPERATOR) return recordOnce(read.exact, result);
  try {
    return { result, record: await writeRecordOnce(store, telemetry, { claim: read.exact, result, payment: input.payment, exact: true }) };
  } catch (error) {
    if (!(error instanceof LeaseLostError)) throw error;
    const now = await readFence(store, claim);
    if ('movedOn' in now) return now.movedOn;
    throw new CallInFlightError(Math.max(0, now.current.leaseExpiresAtMs - nowMs()));
  }
}

/**
 * The `completePaymentRecord` activity (handoff design): {@link completeRecord} on the consumer's store. A payment
 * that ended `failed` (retry budget spent) is counted in `payments.failed` and logged as an error, once per write. A
 * failure (a hold, a budget spent) is written as the activity's hold is: never while a call announced since the claim
 * may land, and on the version read.
 */
export function completeRecordActivity(store: () => IdempotencyStore, telemetry: () => Telemetry, nowMs: () => number = Date.now): ActivityHandler {
  return async (input: unknown) => {
    const recordInput = input as CompleteRecordInput;
    const { result } = recordInput;
    if (result.status !== 'failed') return writeRecordOnce(store(), telemetry, recordInput);
    return writeHoldOnVersionRead(store(), recordInput.claim, nowMs(), (current) =>
      writeRecordOnce(store(), telemetry, { ...recordInput, claim: current, exact: true }),
    );
  };
}
