import * as df from 'durable-functions';
import type { ActivityHandler, EntityContext, OrchestrationContext } from 'durable-functions';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../payments/chargeEntity';
import { chargeOrchestration, type ChargeActivityInput, type ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import type { PaymentProviderClient } from '../payments/PaymentProviderClient';
import type { IdempotencyStore } from 'azure-functions-idempotency';
import { completeRecord, type CompleteRecordInput } from '../payments/completeRecord';
import type { ChargeResult } from '../payments/schema';
import type { Telemetry } from '../telemetry/Telemetry';
import { MetricNames } from '../telemetry/Telemetry';

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

/** Retries of the record write (a store outage): 1 s doubling, 8 attempts; the run fails only past them. */
const RECORD_RETRY = new df.RetryOptions(1_000, 8);
RECORD_RETRY.backoffCoefficient = 2;

/** The `chargePayment` orchestrator: {@link chargeOrchestration} over the Durable context. */
export function* chargePaymentOrchestrator(context: OrchestrationContext): Generator<df.Task, unknown, unknown> {
  const input = context.df.getInput<ChargeOrchestrationInput>();
  return yield* chargeOrchestration<df.Task>(input, {
    callEntity: (entityKey, operation) => context.df.callEntity(new df.EntityId(CHARGE_ENTITY, entityKey), operation.name, operation),
    // A plain call: the run retries it (timers), so that a retry can look up first (an engine retry re-sends this input).
    chargeProvider: (activityInput) => context.df.callActivity(CHARGE_ACTIVITY, activityInput),
    completeRecord: (recordInput) => context.df.callActivityWithRetry(COMPLETE_RECORD_ACTIVITY, RECORD_RETRY, recordInput),
    timer: (atMs) => context.df.createTimer(new Date(atMs)),
    nowMs: () => context.df.currentUtcDateTime.getTime(),
  });
}

/** The `paymentCharge` entity: {@link applyChargeOperation} over the entity's state. */
export function paymentChargeEntity(context: EntityContext<ChargeEntityState>): void {
  const operation = context.df.getInput<ChargeEntityOperation>() ?? ({ name: context.df.operationName } as ChargeEntityOperation);
  const applied = applyChargeOperation(context.df.getState(), operation, Date.now());
  context.df.setState(applied.state);
  context.df.return(applied.reply);
}

/**
 * The `chargeProvider` activity: one provider call with the payment's `Idempotency-Key`; with `lookUpFirst`, the
 * charge made under the key is looked up first and returned without charging again when there is one.
 */
export function chargeProviderActivity(provider: PaymentProviderClient): ActivityHandler {
  return async (input: unknown) => chargeOnce(provider, input as ChargeActivityInput);
}

/**
 * The activity's body (the local executor calls it too): look up when asked, else (or when nothing is found) charge.
 * A charge found under the key for another amount or currency is another payment's (the key reused after its record
 * expired): answered as the provider answers a key reused with another body (422, `rejected`), never returned as this
 * payment's charge, and never charged again.
 */
export async function chargeOnce(provider: Pick<PaymentProviderClient, 'charge' | 'findCharge'>, input: ChargeActivityInput): Promise<ChargeResult> {
  const { payment, idempotencyKey, correlationId, lookUpFirst } = input;
  if (lookUpFirst) {
    const found = await provider.findCharge(idempotencyKey, correlationId);
    if (found?.status === 'succeeded') {
      if (found.amount === payment.amount && found.currency === payment.currency) return found;
      return { status: 'rejected', reason: 'idempotency key used before with a different body (found by look-up)', code: 'idempotency-key-reused' };
    }
  }
  return provider.charge(payment, idempotencyKey, correlationId);
}

/**
 * The `completePaymentRecord` activity (handoff design): {@link completeRecord} on the consumer's store. A payment
 * that ended `failed` (retry budget spent) is counted in `payments.failed` and logged as an error, once per write.
 */
export function completeRecordActivity(store: () => IdempotencyStore, telemetry: () => Telemetry): ActivityHandler {
  return async (input: unknown) => {
    const recordInput = input as CompleteRecordInput;
    const outcome = await completeRecord(store(), recordInput);
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
  };
}
