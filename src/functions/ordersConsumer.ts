import { app, type InvocationContext } from '@azure/functions';
import { makeOrdersHandler } from '../orders/ordersHandler';
import { ordersDepsFromSettings } from '../orders/ordersDeps';
import { appSettings, appTelemetry, once } from './handlers/appContext';

const handler = once(() => makeOrdersHandler(ordersDepsFromSettings(appSettings(), appTelemetry())));
// Validate the settings at start, not at the first message (nothing here does I/O).
handler();

/**
 * Service Bus trigger of the `orders` queue (thin: the logic is in `src/orders`). Returning
 * completes the message; throwing abandons it (redelivery).
 */
export async function ordersConsumer(message: unknown, context: InvocationContext): Promise<void> {
  await handler()(message, context);
}

app.serviceBusQueue('ordersConsumer', {
  connection: 'ServiceBusConnection',
  queueName: '%ORDERS_QUEUE_NAME%',
  handler: ordersConsumer,
});
