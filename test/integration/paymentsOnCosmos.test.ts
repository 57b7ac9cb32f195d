import { TableClient } from '@azure/data-tables';
import { InvocationContext } from '@azure/functions';
import { randomUUID } from 'node:crypto';
import { paymentsFromSettings, providerFromSettings } from '../../src/app/payments';
import { makePaymentsHandler } from '../../src/app/paymentsHandler';
import { paymentStatusFromSettings } from '../../src/app/http';
import { chargeOnce } from '../../src/app/durableCharge';
import { loadSettings } from '../../src/config/settings';
import { CosmosIdempotencyStore, TableIdempotencyStore, keyFromMessageId } from 'azure-functions-idempotency/internal';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { LocalChargeWorkflow } from '../../tools/local/LocalChargeWorkflow';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';
import { localRowsInContainer } from '../support/cosmosRows';

// The payments consumer with IDEMPOTENCY_STORE=cosmos, wired by the app's own factories (src/app), its records on
// the Cosmos emulator; Azurite keeps the parking table and the local Durable executor's state.
const azuriteOf = useAzurite();
let cosmos: CosmosEmulator;
let provider: FakePaymentProvider;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});
beforeEach(async () => {
  provider = await FakePaymentProvider.start();
});
afterEach(async () => {
  await provider.stop();
});

test('settings: IDEMPOTENCY_STORE is table by default, cosmos needs COSMOS_ENDPOINT, anything else is refused naming it', () => {
  const base = { IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' };
  expect(loadSettings(base)).toMatchObject({ IDEMPOTENCY_STORE: 'table', COSMOS_IDEMPOTENCY_CONTAINER: 'idempotency' });
  expect(() => loadSettings({ ...base, IDEMPOTENCY_STORE: 'cosmos' })).toThrow(/IDEMPOTENCY_STORE: IDEMPOTENCY_STORE=cosmos needs COSMOS_ENDPOINT/);
  expect(() => loadSettings({ ...base, IDEMPOTENCY_STORE: 'redis' })).toThrow(/IDEMPOTENCY_STORE/);
  expect(loadSettings({ ...base, IDEMPOTENCY_STORE: 'cosmos', COSMOS_ENDPOINT: 'https://localhost:8081' }).IDEMPOTENCY_STORE).toBe('cosmos');
});

test('IDEMPOTENCY_STORE=cosmos: the same message delivered 4 times charges once; its record and Payment row are in Cosmos, none in the table', async () => {
  const prefix = `c${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const table = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
  const container = await cosmos.freshIdempotencyContainer();
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    IDEMPOTENCY_STORE: 'cosmos',
    COSMOS_ENDPOINT: cosmos.endpoint,
    PAYMENT_PROVIDER_URL: provider.url,
    // The store choice under the holding design (the local workflow waits for the charge); the handoff's record
    // write goes through the same `paymentsFromSettings` store.
    PAYMENTS_DESIGN: 'hold',
  });
  const telemetry = new Telemetry();
  const providerClient = providerFromSettings(settings, telemetry);
  const durableTable = table('durable');
  const workflow = new LocalChargeWorkflow({
    table: durableTable,
    chargeProvider: (input) => chargeOnce(providerClient, input),
    retry: { maxAttempts: 3, firstRetryIntervalMs: 50 },
  });
  const { store, parking, consumer } = paymentsFromSettings(settings, {
    tableClient: (name) => table(name),
    telemetry,
    workflow,
    leaseMs: 2_000,
    idempotencyContainer: container,
  });
  await Promise.all([store.ensureTable(), parking.ensureTable(), durableTable.createTable()]);
  const handler = makePaymentsHandler({ consumer: () => consumer, telemetry: () => telemetry, workflow: () => workflow });
  const deliver = (deliveryCount: number) =>
    handler(
      { paymentId: 'pay-c1', customerId: 'cust-1', amount: 1250, currency: 'EUR' },
      new InvocationContext({
        invocationId: randomUUID(),
        functionName: 'paymentsConsumer',
        triggerMetadata: { messageId: 'pay-c1', deliveryCount },
        logHandler: () => undefined,
      }),
    );

  const results = [];
  for (let i = 1; i <= 4; i++) results.push(await deliver(i));
  expect(results[0]).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
  for (const later of results.slice(1)) expect(later).toMatchObject({ outcome: 'duplicate' });
  expect(provider.chargesFor('pay-c1')).toBe(1);

  const key = keyFromMessageId('payments', 'pay-c1');
  const cosmosStore = new CosmosIdempotencyStore(container, { retentionMs: 1 });
  expect(await cosmosStore.get(key)).toMatchObject({ status: 'COMPLETED', attempt: 1, localRows: ['payment'] });
  expect((await localRowsInContainer(container, cosmosStore.recordIdOf(key))).get('payment')).toMatchObject({ paymentId: 'pay-c1', state: 'succeeded' });
  expect(await store.get(key)).toBeUndefined(); // the table store (IDEMPOTENCY_TABLE_NAME) was not written
});

test("IDEMPOTENCY_STORE=cosmos: GET /api/payments/{id} reads the consumer's record from Cosmos and an accepted-only payment from the table", async () => {
  const prefix = `s${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const container = await cosmos.freshIdempotencyContainer();
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    IDEMPOTENCY_STORE: 'cosmos',
    COSMOS_ENDPOINT: cosmos.endpoint,
  });
  const tableClient = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
  const overrides = { tableClient, idempotencyContainer: container };
  const table = new TableIdempotencyStore(tableClient(settings.IDEMPOTENCY_TABLE_NAME), { retentionMs: 86_400_000 });
  await table.ensureTable();
  const cosmosStore = new CosmosIdempotencyStore(container, { retentionMs: 86_400_000 });
  await cosmosStore.commit(keyFromMessageId('payments', 'pay-done'), 'd', { status: 'succeeded', chargeId: 'ch-1' });
  await table.commit({ consumer: 'http-payments-accepted', key: 'pay-new' }, 'd', { acceptedAt: '2026-12-01T00:00:00.000Z' });
  const endpoint = paymentStatusFromSettings(settings, overrides)();
  const get = async (id: string) => {
    const answer = await endpoint({ method: 'GET', url: `http://localhost/api/payments/${id}`, headers: { get: () => null }, body: Buffer.alloc(0) });
    return { status: answer.status, body: JSON.parse(answer.body.toString('utf8')) as Record<string, unknown> };
  };
  expect(await get('pay-done')).toMatchObject({ status: 200, body: { paymentId: 'pay-done', status: 'succeeded', chargeId: 'ch-1' } });
  expect(await get('pay-new')).toMatchObject({ status: 200, body: { paymentId: 'pay-new', status: 'accepted' } });
  expect((await get('pay-none')).status).toBe(404);
});
