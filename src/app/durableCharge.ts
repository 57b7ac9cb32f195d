import * as df from 'durable-functions';
import type { ActivityHandler, EntityContext, OrchestrationContext } from 'durable-functions';
import { PROVIDER_RETRY as PROVIDER_RETRY_POLICY } from '../payments/chargePatience';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../payments/chargeEntity';
import { chargeOrchestration, type ChargeActivityInput, type ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import type { PaymentProviderClient } from '../payments/PaymentProviderClient';
import type { IdempotencyStore } from '../core/public';
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

/** Provider activity retries (2, 4, 8, 16 s), counted in the deliveries' patience (chargePatience.ts). */
const PROVIDER_RETRY = new df.RetryOptions(PROVIDER_RETRY_POLICY.firstRetryIntervalMs, PROVIDER_RETRY_POLICY.maxNumberOfAttempts);
PROVIDER_RETRY.backoffCoefficient = PROVIDER_RETRY_POLICY.backoffCoefficient;

/** The `chargePayment` orchestrator: {@link chargeOrchestration} over the Durable context. */
export function* chargePaymentOrchestrator(context: OrchestrationContext): Generator<df.Task, unknown, unknown> {
  const input = context.df.getInput<ChargeOrchestrationInput>();
  return yield* chargeOrchestration<df.Task>(input, {
    callEntity: (entityKey, operation) => context.df.callEntity(new df.EntityId(CHARGE_ENTITY, entityKey), operation.name, operation),
    chargeProvider: (activityInput) => context.df.callActivityWithRetry(CHARGE_ACTIVITY, PROVIDER_RETRY, activityInput),
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

/** The `chargeProvider` activity: one provider call with the payment's `Idempotency-Key`. */
export function chargeProviderActivity(provider: PaymentProviderClient): ActivityHandler {
  return async (input: unknown) => {
    const { payment, idempotencyKey, correlationId } = input as ChargeActivityInput;
    return provider.charge(payment, idempotencyKey, correlationId);
  };
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
