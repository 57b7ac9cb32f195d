import { CosmosClient } from '@azure/cosmos';
import { DefaultAzureCredential } from '@azure/identity';
import type { Settings } from '../config/settings';
import { ConfigurationError } from '../core/errors';
import { ParkingStore } from '../messaging/ParkingStore';
import { Telemetry } from '../telemetry/Telemetry';
import { OrdersStore } from './OrdersStore';
import type { OrdersHandlerDeps } from './ordersHandler';
import { createTableClient } from '../storage/tableClient';

/**
 * The orders handler's dependencies from validated settings, as the Functions app builds them:
 * Cosmos at `COSMOS_ENDPOINT` with Microsoft Entra ID (`DefaultAzureCredential`, user-assigned
 * identity `AZURE_CLIENT_ID`; the account has local auth disabled), database
 * `COSMOS_DATABASE_NAME`, container `COSMOS_ORDERS_CONTAINER`; parking on Table Storage.
 * With `COSMOS_KEY` (local runs against the Cosmos DB emulator only; never deployed) the key is used instead.
 * Sends nothing: the credential and the clients connect on first use.
 * @throws ConfigurationError when `COSMOS_ENDPOINT` is missing.
 */
export function ordersDepsFromSettings(settings: Settings, telemetry: Telemetry = new Telemetry()): OrdersHandlerDeps {
  if (!settings.COSMOS_ENDPOINT) throw new ConfigurationError('COSMOS_ENDPOINT: required by the orders consumer');
  const cosmos = settings.COSMOS_KEY
    ? new CosmosClient({ endpoint: settings.COSMOS_ENDPOINT, key: settings.COSMOS_KEY })
    : new CosmosClient({ endpoint: settings.COSMOS_ENDPOINT, aadCredentials: new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID }) });
  const container = cosmos.database(settings.COSMOS_DATABASE_NAME).container(settings.COSMOS_ORDERS_CONTAINER);
  return {
    store: new OrdersStore(container),
    parking: new ParkingStore(createTableClient(settings, {}, settings.PARKED_TABLE_NAME), undefined, { callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS }),
    telemetry,
    maxDeliveryCount: settings.SERVICEBUS_MAX_DELIVERY_COUNT,
  };
}
