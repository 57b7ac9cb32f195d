import { ServiceBusClient, type ServiceBusSender } from '@azure/service-bus';
import { serviceBusPaymentQueue } from '../../src/app/paymentQueue';
import { loadSettings } from '../../src/config/settings';

/**
 * The managed identity the payments queue sends with (src/app/paymentQueue.ts): with `SERVICEBUS_FULLY_QUALIFIED_NAMESPACE`
 * the client authenticates as the user-assigned identity `AZURE_CLIENT_ID` names (the Bicep gives the app that id and
 * grants it Data Sender); dropping it would send as another identity, or none. The credential is recorded, never asked
 * for a token; the sender is recorded, never opened.
 */
const credentials: unknown[] = [];
jest.mock('@azure/identity', () => ({
  DefaultAzureCredential: jest.fn().mockImplementation((options: unknown) => {
    credentials.push(options);
    return { getToken: () => Promise.reject(new Error('no token in tests')) };
  }),
}));

const payment = { paymentId: 'pay-1', customerId: 'c', amount: 100, currency: 'EUR' };

beforeEach(() => {
  credentials.length = 0;
  jest.spyOn(ServiceBusClient.prototype, 'createSender').mockImplementation(() => ({ sendMessages: () => Promise.resolve() }) as unknown as ServiceBusSender);
});
afterEach(() => jest.restoreAllMocks());

test('sends as the user-assigned identity AZURE_CLIENT_ID names', async () => {
  const queue = serviceBusPaymentQueue(
    loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
      SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: 'bus.example.test',
      AZURE_CLIENT_ID: '00000000-0000-0000-0000-00000000abcd',
    }),
  );
  await queue.send(payment, new AbortController().signal);
  expect(credentials).toEqual([{ managedIdentityClientId: '00000000-0000-0000-0000-00000000abcd' }]);
});

test('without AZURE_CLIENT_ID: the default identity (no client id)', async () => {
  const queue = serviceBusPaymentQueue(
    loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: 'bus.example.test' }),
  );
  await queue.send(payment, new AbortController().signal);
  expect(credentials).toEqual([{ managedIdentityClientId: undefined }]);
});

test('with a connection string (the emulator): no credential at all', async () => {
  const queue = serviceBusPaymentQueue(
    loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
      SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://bus.example.test/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0',
      SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: 'bus.example.test',
      AZURE_CLIENT_ID: '00000000-0000-0000-0000-00000000abcd',
    }),
  );
  await queue.send(payment, new AbortController().signal);
  expect(credentials).toEqual([]);
});
