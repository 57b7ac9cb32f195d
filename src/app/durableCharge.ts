import * as df from 'durable-functions';
import type { ActivityHandler, EntityContext, OrchestrationContext } from 'durable-functions';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../payments/chargeEntity';
import { chargeOrchestration, type ChargeActivityInput, type ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import { chargeOnce, type HeldReporter } from '../payments/chargeOnce';

export { atTheCall, chargeOnce, type HeldReporter } from '../payments/chargeOnce';
import type { PaymentProviderClient } from '../payments/PaymentProviderClient';
import { IdempotencyError, RecordStatus, StoreRequestError, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import { completeRecord, type CompleteRecordInput, type CompleteRecordOutcome, type RecordedCharge } from '../payments/completeRecord';
import type { ChargeResult } from '../payments/schema';
import { MetricNames, Telemetry } from '../telemetry/Telemetry';

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
 * the answer, whatever it is, is then written to the record once ({@link writeRecordOnce}) and the activity answers
 * a `RecordedCharge`: a store that does not answer gives `unwritten` (the run retries the write on durable timers),
 * never an error (an error would make the run call the provider again).
 */
export function chargeProviderActivity(
  provider: PaymentProviderClient,
  telemetry: () => Telemetry = () => new Telemetry(),
  store?: () => IdempotencyStore,
  nowMs: () => number = Date.now,
): ActivityHandler {
  const report = heldReporter(telemetry);
  return async (input: unknown): Promise<ChargeResult | RecordedCharge> => {
    const activityInput = input as ChargeAndRecordInput;
    const claim = activityInput.recordClaim;
    if (claim && !store) throw new Error('chargeProvider: a run asked for the record write and the activity has no store');
    if (claim && store) {
      const moved = await recordMovedOn(store(), claim, { openUntilMs: activityInput.fenceOpenUntilMs, nowMs });
      if (moved) return moved;
    }
    const result = await chargeOnce(provider, activityInput, report, nowMs);
    if (!claim || !store) return result;
    try {
      return { result, record: await writeRecordOnce(store(), telemetry, { claim, result, payment: activityInput.payment }) };
    } catch {
      return { result, record: 'unwritten' };
    }
  };
}

/**
 * The fence before a provider call of a handoff run (version 2): the record must still be in progress under the
 * claim's attempt. An activity work item runs at least once and may run late: the Azure Storage provider sends a
 * run's messages before it writes its history, so a host that dies between sends the activity again, and that copy
 * can wait in the work-item queue for hours, after the run recorded the payment (`failed`, say) and ended. Such a copy
 * must not charge: it answers what the record says, marked `fenced` (nothing written), without calling the provider.
 * A store that does not answer lets a fresh call go on and refuses a stale one (see the body).
 * @returns undefined when the claim still holds the record in progress, or the store cannot say
 */
export async function recordMovedOn(
  store: IdempotencyStore,
  claim: Claim,
  open: { readonly openUntilMs?: number; readonly nowMs?: () => number } = {},
): Promise<RecordedCharge | undefined> {
  let record;
  try {
    record = await store.get(claim.key);
  } catch (error) {
    // Fails open for a fresh call: a store that does not answer (or refuses: 403) cannot tell, and failing every round
    // would turn a long store fault into a payment `failed` after its budget even when the provider had answered (a
    // decline replayed by key: simulator seed 360). A call older than `openUntilMs` may be a stale copy of a round the
    // run has moved past (seed 26150): refused, the run retries with a fresh call.
    const nowMs = open.nowMs ?? Date.now;
    if (open.openUntilMs !== undefined && nowMs() > open.openUntilMs) throw new FenceUnreadableError(nowMs() - open.openUntilMs, error);
    return undefined;
  }
  if (record?.status === RecordStatus.InProgress && record.attempt === claim.attempt && record.createdAtMs === claim.createdAtMs) return undefined;
  const result: ChargeResult =
    record?.status === RecordStatus.Completed && record.createdAtMs === claim.createdAtMs
      ? (record.result as ChargeResult)
      : {
          status: 'failed',
          reason: `not charged: the record moved on (${record ? `${record.status}, attempt ${record.attempt}` : 'gone'}) before this call of attempt ${claim.attempt}`,
        };
  return { result, record: 'fenced' };
}

/**
 * The fence could not read the record and the call is past its fresh window (`FENCE_OPEN_FOR_MS`, src/payments/handOffPlan.ts): nothing is
 * called. Retryable: the run's round fails and it schedules a fresh call; a stale copy's answer goes nowhere.
 */
export class FenceUnreadableError extends IdempotencyError {
  constructor(lateByMs: number, cause: unknown) {
    super(
      `not calling the provider: the record could not be read to fence this call, which is ${Math.round(lateByMs / 1000)} s past its fresh window (a stale work item, or a store fault)`,
      {
        cause,
        retryable: true,
      },
    );
  }
}

/**
 * Counts `payments.held` (error log with key and reason) and `payments.provider.lookup_unsupported` (each time; the
 * configuration error is logged once per process, loudly, not once per payment).
 */
export function heldReporter(telemetry: () => Telemetry): HeldReporter {
  let lookupReported = false;
  return {
    held(input, reason) {
      const t = telemetry();
      t.count(MetricNames.paymentsHeld, { consumer: 'payments' });
      t.log('error', `payments: held for an operator (${reason})`, { consumer: 'payments', outcome: 'held', idempotencyKey: input.idempotencyKey, reason });
    },
    lookupUnsupported(input, statusCode) {
      const t = telemetry();
      t.count(MetricNames.providerLookupUnsupported, { consumer: 'payments', statusCode });
      if (lookupReported) return;
      lookupReported = true;
      t.log(
        'error',
        `payments: configuration error: the provider answered ${statusCode} to a charge look-up, so it offers none; ` +
          'set PAYMENT_PROVIDER_LOOKUP=none (payments that need a look-up are held for an operator meanwhile)',
        { consumer: 'payments', outcome: 'lookup-unsupported', idempotencyKey: input.idempotencyKey, statusCode },
      );
    },
  };
}

/**
 * The `completePaymentRecord` activity (handoff design): {@link completeRecord} on the consumer's store. A payment
 * that ended `failed` (retry budget spent) is counted in `payments.failed` and logged as an error, once per write.
 */
export function completeRecordActivity(store: () => IdempotencyStore, telemetry: () => Telemetry): ActivityHandler {
  return async (input: unknown) => writeRecordOnce(store(), telemetry, input as CompleteRecordInput);
}

/**
 * One try of the record write ({@link completeRecord}); a failed payment written is counted and logged; a store that
 * does not answer is logged (warn: the run retries) and thrown.
 */
export async function writeRecordOnce(store: IdempotencyStore, telemetry: () => Telemetry, recordInput: CompleteRecordInput): Promise<CompleteRecordOutcome> {
  let outcome;
  try {
    outcome = await completeRecord(store, recordInput);
  } catch (error) {
    // The store did not answer: the run calls again after a durable timer (RECORD_WRITE_RETRY); say so once a try.
    const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (error instanceof StoreRequestError) {
      // Refused (403 after a role change, 404 for a deleted table, 400 from a bug): no wait fixes it, an operator
      // does. The customer may be charged already: alert at once, keep retrying (the fix lets the next try land).
      const t = telemetry();
      t.count(MetricNames.recordWriteRefused, { consumer: 'payments', statusCode: error.statusCode ?? 0 });
      t.log('error', `payments: the record write was refused (${why}); the run retries it until the store is fixed`.slice(0, 500), {
        consumer: 'payments',
        outcome: 'record-write-refused',
        idempotencyKey: recordInput.claim.key.key,
        attempt: recordInput.claim.attempt,
        statusCode: error.statusCode,
      });
      throw error;
    }
    telemetry().log('warn', `payments: record write failed, the run retries it (${why})`.slice(0, 500), {
      consumer: 'payments',
      outcome: 'recordWriteRetry',
      idempotencyKey: recordInput.claim.key.key,
      attempt: recordInput.claim.attempt,
    });
    throw error;
  }
  const result: ChargeResult = recordInput.result;
  if (outcome === 'completed' && result.status === 'failed') {
    const t = telemetry();
    t.count(MetricNames.paymentsFailed, { consumer: 'payments' });
    t.log('error', `payments: failed (${result.reason})`, {
      consumer: 'payments',
      outcome: 'failed',
      idempotencyKey: recordInput.claim.key.key,
      attempt: recordInput.claim.attempt,
      reason: result.reason,
    });
  }
  return outcome;
}
