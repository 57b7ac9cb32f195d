import { app } from '@azure/functions';
import * as df from 'durable-functions';
import type { ActivityHandler, EntityContext, OrchestrationContext } from 'durable-functions';
import { paymentsConsumerFromSettings, providerFromSettings } from '../app/payments';
import { PROVIDER_RETRY as PROVIDER_RETRY_POLICY } from '../payments/chargePatience';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../payments/chargeEntity';
import { chargeOrchestration, type ChargeActivityInput, type ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import { appSettings, appTelemetry, once } from './handlers/appContext';
import { CHARGE_ORCHESTRATION, DurableChargeWorkflow } from './handlers/DurableChargeWorkflow';
import { makePaymentsHandler } from './handlers/paymentsHandler';

/** Registrations of the payments consumer: trigger, orchestration, entity and activity. */

const CHARGE_ENTITY = 'paymentCharge';
/** Provider activity retries (2, 4, 8, 16 s), counted in the deliveries' patience (chargePatience.ts). */
const PROVIDER_RETRY = new df.RetryOptions(PROVIDER_RETRY_POLICY.firstRetryIntervalMs, PROVIDER_RETRY_POLICY.maxNumberOfAttempts);
PROVIDER_RETRY.backoffCoefficient = PROVIDER_RETRY_POLICY.backoffCoefficient;

const consumer = once(() => paymentsConsumerFromSettings(appSettings(), appTelemetry()));
const provider = once(() => providerFromSettings(appSettings(), appTelemetry()));
// Validate the settings at start, not at the first message (nothing here does I/O).
provider();

export const paymentsTrigger = makePaymentsHandler({
  consumer,
  telemetry: appTelemetry,
  workflow: (context) => new DurableChargeWorkflow(df.getClient(context)),
});

app.serviceBusQueue('paymentsConsumer', {
  connection: 'ServiceBusConnection',
  queueName: '%PAYMENTS_QUEUE_NAME%',
  extraInputs: [df.input.durableClient()],
  handler: async (message, context) => {
    await paymentsTrigger(message, context);
  },
});

export function* chargePaymentOrchestrator(context: OrchestrationContext): Generator<df.Task, unknown, unknown> {
  const input = context.df.getInput<ChargeOrchestrationInput>();
  return yield* chargeOrchestration<df.Task>(input, {
    callEntity: (entityKey, operation) => context.df.callEntity(new df.EntityId(CHARGE_ENTITY, entityKey), operation.name, operation),
    chargeProvider: (activityInput) => context.df.callActivityWithRetry('chargeProvider', PROVIDER_RETRY, activityInput),
  });
}
df.app.orchestration(CHARGE_ORCHESTRATION, chargePaymentOrchestrator);

export function paymentChargeEntity(context: EntityContext<ChargeEntityState>): void {
  const operation = context.df.getInput<ChargeEntityOperation>() ?? ({ name: context.df.operationName } as ChargeEntityOperation);
  const applied = applyChargeOperation(context.df.getState(), operation, Date.now());
  context.df.setState(applied.state);
  context.df.return(applied.reply);
}
df.app.entity(CHARGE_ENTITY, paymentChargeEntity);

export const chargeProviderActivity: ActivityHandler = async (input: unknown) => {
  const { payment, idempotencyKey, correlationId } = input as ChargeActivityInput;
  return provider().charge(payment, idempotencyKey, correlationId);
};
df.app.activity('chargeProvider', { handler: chargeProviderActivity });
