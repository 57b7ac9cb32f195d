import { InvocationContext } from '@azure/functions';
import { TableClient } from '@azure/data-tables';
import type { Container } from '@azure/cosmos';
import { randomUUID } from 'node:crypto';
import { ordersDepsFromSettings } from '../../src/app/orders';
import { loadSettings } from '../../src/config/settings';
import { ensureOrdersContainer } from '../../src/orders/OrdersStore';
import { makeOrdersHandler, ORDERS_CONSUMER } from '../../src/orders/ordersHandler';
import { cosmosClientFor } from '../cosmos/CosmosEmulator';
import type { ServiceBusMetadata } from './host/serviceBusRequest';

export interface OrdersRigOptions {
  /** Cosmos endpoint (loopback: the in-process emulator, `tools/cosmos/CosmosEmulator.ts`). */
  readonly cosmosEndpoint: string;
  /** Table Storage connection string for the parking table (Azurite; the demo passes its outage proxy). */
  readonly tableConnectionString: string;
  /** The queue's `maxDeliveryCount`: on that delivery a status for a missing order is parked. */
  readonly maxDeliveryCount?: number;
}

/**
 * The orders consumer wired for the demo: the app's own wiring (`src/app/orders.ts`) on a Cosmos container created
 * here as infra/ creates it, parking on Azurite. `deliver` calls the handler as the Service Bus trigger would.
 */
export async function startOrdersRig(options: OrdersRigOptions) {
  const prefix = `o${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const cosmos = cosmosClientFor(options.cosmosEndpoint);
  const container: Container = await ensureOrdersContainer(cosmos, 'shop', `orders${prefix}`);
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: options.tableConnectionString,
    COSMOS_ENDPOINT: options.cosmosEndpoint,
    SERVICEBUS_MAX_DELIVERY_COUNT: String(options.maxDeliveryCount ?? 10),
  });
  const deps = ordersDepsFromSettings(settings, {
    container,
    tableClient: (name) =>
      TableClient.fromConnectionString(options.tableConnectionString, `${prefix}${name}`, {
        allowInsecureConnection: true,
        retryOptions: { maxRetries: 2, retryDelayInMs: 50, maxRetryDelayInMs: 500 },
      }),
  });
  const { store, parking, telemetry } = deps;
  await parking.ensureTable();
  const handler = makeOrdersHandler(deps);

  /** One delivery through the real handler; resolves to its outcome, rejects when it would be abandoned. */
  function deliver(body: unknown, metadata: ServiceBusMetadata) {
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: 'ordersConsumer',
      triggerMetadata: { deliveryCount: 1, ...metadata, applicationProperties: metadata.applicationProperties ?? {} },
      logHandler: () => undefined,
    });
    return handler(body, context);
  }

  /** Every document of the container (the emulator ignores the partition-key option; this reads all). */
  async function allDocuments<T = Record<string, unknown>>(): Promise<T[]> {
    const { resources } = await container.items.query<T>('SELECT * FROM c').fetchAll();
    return resources;
  }

  return {
    consumer: ORDERS_CONSUMER,
    cosmos,
    container,
    store,
    parking,
    telemetry,
    handler,
    deliver,
    allDocuments,
    stop: async () => cosmos.dispose(),
  };
}
export type OrdersRig = Awaited<ReturnType<typeof startOrdersRig>>;
