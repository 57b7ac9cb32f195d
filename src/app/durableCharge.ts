import * as df from 'durable-functions';
import type { ActivityHandler, EntityContext, OrchestrationContext } from 'durable-functions';
import { PROVIDER_RETRY as PROVIDER_RETRY_POLICY } from '../payments/chargePatience';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../payments/chargeEntity';
import { chargeOrchestration, type ChargeActivityInput, type ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import type { PaymentProviderClient } from '../payments/PaymentProviderClient';

/**
 * The charge on Durable Functions: the orchestration, entity and activity bodies the registrations
 * (`src/functions/payments.ts`) name. The logic is in `src/payments` (pure, tested without the runtime).
 */

/** Function names, written once: the registrations and the calls between them use these. */
export const CHARGE_ORCHESTRATION = 'chargePayment';
export const CHARGE_ENTITY = 'paymentCharge';
export const CHARGE_ACTIVITY = 'chargeProvider';

/** Provider activity retries (2, 4, 8, 16 s), counted in the deliveries' patience (chargePatience.ts). */
const PROVIDER_RETRY = new df.RetryOptions(PROVIDER_RETRY_POLICY.firstRetryIntervalMs, PROVIDER_RETRY_POLICY.maxNumberOfAttempts);
PROVIDER_RETRY.backoffCoefficient = PROVIDER_RETRY_POLICY.backoffCoefficient;

/** The `chargePayment` orchestrator: {@link chargeOrchestration} over the Durable context. */
export function* chargePaymentOrchestrator(context: OrchestrationContext): Generator<df.Task, unknown, unknown> {
  const input = context.df.getInput<ChargeOrchestrationInput>();
  return yield* chargeOrchestration<df.Task>(input, {
    callEntity: (entityKey, operation) => context.df.callEntity(new df.EntityId(CHARGE_ENTITY, entityKey), operation.name, operation),
    chargeProvider: (activityInput) => context.df.callActivityWithRetry(CHARGE_ACTIVITY, PROVIDER_RETRY, activityInput),
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
