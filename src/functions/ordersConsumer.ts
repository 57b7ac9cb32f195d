import { app, type InvocationContext } from '@azure/functions';
import { loadSettings } from '../config/settings';
import { makeOrdersHandler, type OrdersHandler } from '../orders/ordersHandler';
import { ordersDepsFromSettings } from '../orders/ordersDeps';
import { startTelemetry } from '../telemetry/startTelemetry';

let handler: OrdersHandler | undefined;

/**
 * Service Bus trigger of the `orders` queue (thin: the logic is in `src/orders`). Dependencies are
 * built from settings on the first message, so a bad setting fails that invocation with a message
 * naming the setting. Returning completes the message; throwing abandons it (redelivery).
 */
export async function ordersConsumer(message: unknown, context: InvocationContext): Promise<void> {
  if (!handler) {
    startTelemetry();
    handler = makeOrdersHandler(ordersDepsFromSettings(loadSettings()));
  }
  await handler(message, context);
}

app.serviceBusQueue('ordersConsumer', {
  connection: 'ServiceBusConnection',
  queueName: '%ORDERS_QUEUE_NAME%',
  handler: ordersConsumer,
});
