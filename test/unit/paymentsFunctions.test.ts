import { app, InvocationContext } from '@azure/functions';
import { ConfigurationError } from 'azure-functions-idempotency';
import * as df from 'durable-functions';
import { chargePaymentOrchestrator, paymentChargeEntity } from '../../src/app/durableCharge';
import { paymentsFunctionsFrom, paymentsLayoutGate, registerPaymentsFunctions } from '../../src/app/paymentsFunctions';
import { loadSettings } from '../../src/config/settings';
import { MetricNames } from '../../src/telemetry/Telemetry';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { inMemoryTelemetry } from '../support/telemetry';

/**
 * The payments functions as the app builds and registers them (src/app/paymentsFunctions.ts), without a host: the
 * handlers handed to the runtime, the parts built once, the provider and telemetry the activity uses, and when the
 * layout gate exists. The provider is the fake one on loopback; nothing here reads a table.
 */
const settingsOf = (env: Record<string, string>) => loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', ...env });
const context = () => new InvocationContext({ invocationId: 'inv-1', functionName: 'chargeProvider', logHandler: () => undefined });

afterEach(() => jest.restoreAllMocks());

describe('paymentsFunctionsFrom', () => {
  let provider: FakePaymentProvider | undefined;
  afterEach(async () => provider?.stop());

  test('refuses at once without PAYMENT_PROVIDER_URL', () => {
    expect(() => paymentsFunctionsFrom(settingsOf({}))).toThrow(ConfigurationError);
  });

  test("the orchestrator and entity are durableCharge's; the parts are built on first use, once, on the settings' table", async () => {
    provider = await FakePaymentProvider.start();
    const t = inMemoryTelemetry();
    const functions = paymentsFunctionsFrom(settingsOf({ PAYMENT_PROVIDER_URL: provider.url }), { telemetry: t.telemetry });
    expect(functions.orchestrator).toBe(chargePaymentOrchestrator);
    expect(functions.entity).toBe(paymentChargeEntity);
    const parts = functions.parts();
    expect(functions.parts()).toBe(parts);
    expect(parts.consumer).toBeDefined();
    expect(parts.store.client.tableName).toBe('idempotency');
  });

  test("the charge activity charges at the settings' provider with the payment's key; a hold is counted on the app's telemetry", async () => {
    provider = await FakePaymentProvider.start();
    const t = inMemoryTelemetry();
    const functions = paymentsFunctionsFrom(settingsOf({ PAYMENT_PROVIDER_URL: provider.url }), { telemetry: t.telemetry });
    const payment = { paymentId: 'pay-fn-1', customerId: 'cust-1', amount: 990, currency: 'EUR' };
    await expect(functions.activity({ idempotencyKey: 'pay-fn-1', payment }, context())).resolves.toMatchObject({ status: 'succeeded', amount: 990 });
    expect(provider.chargesFor('pay-fn-1')).toBe(1);
    await expect(functions.activity({ idempotencyKey: 'pay-fn-1', payment, hold: 'no look-up offered' }, context())).resolves.toMatchObject({
      status: 'failed',
      code: 'held-for-operator',
    });
    expect(await t.counter(MetricNames.paymentsHeld, { consumer: 'payments' })).toBe(1);
    expect(provider.chargesFor('pay-fn-1')).toBe(1);
  });
});

describe('registerPaymentsFunctions', () => {
  test('the Service Bus trigger on %PAYMENTS_QUEUE_NAME% with the Durable client, the orchestration, entity and both activities under their names', () => {
    const bus = jest.spyOn(app, 'serviceBusQueue').mockImplementation(() => undefined);
    const orchestration = jest.spyOn(df.app, 'orchestration').mockImplementation(() => ({}) as never);
    const entity = jest.spyOn(df.app, 'entity').mockImplementation(() => undefined);
    const activity = jest.spyOn(df.app, 'activity').mockImplementation(() => ({}) as never);
    const functions = {
      trigger: jest.fn(),
      orchestrator: chargePaymentOrchestrator,
      entity: paymentChargeEntity,
      activity: jest.fn(),
      recordActivity: jest.fn(),
    };
    registerPaymentsFunctions(functions);
    expect(bus).toHaveBeenCalledTimes(1);
    expect(bus.mock.calls[0][0]).toBe('paymentsConsumer');
    const options = bus.mock.calls[0][1];
    expect(options).toMatchObject({ connection: 'ServiceBusConnection', queueName: '%PAYMENTS_QUEUE_NAME%', handler: functions.trigger });
    expect(options.extraInputs).toHaveLength(1);
    expect(options.extraInputs?.[0]).toMatchObject({ type: 'durableClient' });
    expect(orchestration.mock.calls).toEqual([['chargePayment', chargePaymentOrchestrator]]);
    expect(entity.mock.calls).toEqual([['paymentCharge', paymentChargeEntity]]);
    expect(activity.mock.calls).toEqual([
      ['chargeProvider', { handler: functions.activity }],
      ['completePaymentRecord', { handler: functions.recordActivity }],
    ]);
  });
});

describe('paymentsLayoutGate', () => {
  const client = () => {
    throw new Error('no table is read to build the gate');
  };

  test('none with one shard, or on the Cosmos store; a gate when sharded on the Table store', () => {
    expect(paymentsLayoutGate(settingsOf({}), client)).toBeUndefined();
    const sharded = { PAYMENT_SHARD_COUNT: '2', PAYMENT_SHARD_INDEX: '1', PAYMENTS_QUEUE_NAME: 'payments-1' };
    expect(
      paymentsLayoutGate(settingsOf({ ...sharded, IDEMPOTENCY_STORE: 'cosmos', COSMOS_ENDPOINT: 'https://cosmos.example.test:443/' }), client),
    ).toBeUndefined();
    expect(typeof paymentsLayoutGate(settingsOf(sharded), client)).toBe('function');
  });
});
