import { app } from '@azure/functions';
import { ordersFunction } from '../app/host';

/** Registration of the orders consumer: Service Bus queue `%ORDERS_QUEUE_NAME%` -> Cosmos DB (not registered when its settings are bad). */
const handler = ordersFunction();
if (handler) app.serviceBusQueue('ordersConsumer', { connection: 'ServiceBusConnection', queueName: '%ORDERS_QUEUE_NAME%', handler });
