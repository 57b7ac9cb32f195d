import { loadSettings } from '../../src/config/settings';
import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { OrdersStore } from '../../src/orders/OrdersStore';
import { ordersDepsFromSettings } from '../../src/app/orders';

describe('ordersDepsFromSettings', () => {
  test('without COSMOS_ENDPOINT it fails naming the setting', () => {
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
    expect(() => ordersDepsFromSettings(settings)).toThrow(ConfigurationError);
    expect(() => ordersDepsFromSettings(settings)).toThrow(/COSMOS_ENDPOINT/);
  });

  test('builds the store on the configured database and container, parking on the parked-messages table, without any request', () => {
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_ENDPOINT: 'https://account.table.core.windows.net',
      COSMOS_ENDPOINT: 'https://account.documents.azure.com:443/',
      COSMOS_DATABASE_NAME: 'shopdb',
      COSMOS_ORDERS_CONTAINER: 'orderdocs',
      AZURE_CLIENT_ID: '00000000-0000-0000-0000-000000000000',
      SERVICEBUS_MAX_DELIVERY_COUNT: '7',
    });
    const deps = ordersDepsFromSettings(settings);
    expect(deps.store).toBeInstanceOf(OrdersStore);
    expect(deps.store.container.id).toBe('orderdocs');
    expect(deps.store.container.database.id).toBe('shopdb');
    expect(deps.parking.client.tableName).toBe('parkedmessages');
    expect(deps.maxDeliveryCount).toBe(7);
  });
});
