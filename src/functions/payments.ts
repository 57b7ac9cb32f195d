import { app } from '@azure/functions';
import * as df from 'durable-functions';
import { CHARGE_ACTIVITY, CHARGE_ENTITY, CHARGE_ORCHESTRATION } from '../app/durableCharge';
import { paymentsFunctions } from '../app/host';

/** Registrations of the payments consumer: trigger, orchestration, entity and activity. */
const payments = paymentsFunctions();

app.serviceBusQueue('paymentsConsumer', {
  connection: 'ServiceBusConnection',
  queueName: '%PAYMENTS_QUEUE_NAME%',
  extraInputs: [df.input.durableClient()],
  handler: payments.trigger,
});
df.app.orchestration(CHARGE_ORCHESTRATION, payments.orchestrator);
df.app.entity(CHARGE_ENTITY, payments.entity);
df.app.activity(CHARGE_ACTIVITY, { handler: payments.activity });
