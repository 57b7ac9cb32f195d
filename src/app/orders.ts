import { CosmosClient, type Container } from '@azure/cosmos';
import { DefaultAzureCredential } from '@azure/identity';
import type { Settings } from '../config/settings';
import { ConfigurationError } from 'azure-functions-idempotency';
import { OrdersStore } from '../orders/OrdersStore';
import type { OrdersHandlerDeps } from '../orders/ordersHandler';
import { Telemetry } from '../telemetry/Telemetry';
import { parkingFromSettings, type WiringOverrides } from './stores';

/** The orders overrides: those of every wiring, plus the Cosmos container (the local rig's emulator). */
export interface OrdersOverrides extends WiringOverrides {
  readonly container?: Container;
}

/**
 * The orders handler's dependencies from validated settings, as the Functions app builds them:
 * Cosmos at `COSMOS_ENDPOINT` with Microsoft Entra ID (`DefaultAzureCredential`, user-assigned
 * identity `AZURE_CLIENT_ID`; the account has local auth disabled), database
 * `COSMOS_DATABASE_NAME`, container `COSMOS_ORDERS_CONTAINER`; parking on Table Storage.
 * With `COSMOS_KEY` (local runs against the Cosmos DB emulator only; never deployed) the key is used instead.
 * Sends nothing: the credential and the clients connect on first use.
 * @throws ConfigurationError when `COSMOS_ENDPOINT` is missing.
 */
export function ordersDepsFromSettings(settings: Settings, overrides: OrdersOverrides = {}): OrdersHandlerDeps {
  if (!settings.COSMOS_ENDPOINT) throw new ConfigurationError('COSMOS_ENDPOINT: required by the orders consumer');
  return {
    store: new OrdersStore(overrides.container ?? containerFromSettings(settings, settings.COSMOS_ENDPOINT)),
    parking: parkingFromSettings(settings, overrides),
    telemetry: overrides.telemetry ?? new Telemetry(),
    clock: overrides.clock,
    maxDeliveryCount: settings.SERVICEBUS_MAX_DELIVERY_COUNT,
  };
}

function containerFromSettings(settings: Settings, endpoint: string): Container {
  const cosmos = settings.COSMOS_KEY
    ? new CosmosClient({ endpoint, key: settings.COSMOS_KEY })
    : new CosmosClient({ endpoint, aadCredentials: new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID }) });
  return cosmos.database(settings.COSMOS_DATABASE_NAME).container(settings.COSMOS_ORDERS_CONTAINER);
}
