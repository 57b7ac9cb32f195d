/**
 * The payments flow on the real Durable engine (tools/durable-host: the Durable Task extension 3.19.0 with its
 * Azure Storage provider, on Azurite), the built app's orchestration, entity and activity, the registered
 * Service Bus trigger with the extension's durableClient binding data. Tests in test/durable/ use the
 * extension's fixed port 17071: they run one after another (`DurableEngineHost` holds a machine-wide lock).
 */
import { TableClient } from '@azure/data-tables';
import { loadSettings } from '../../src/config/settings';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { chargeEntityKey } from '../../src/payments/ChargeWorkflow';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startRealEnginePayments } from '../../tools/local/durable/realEnginePayments';
import { useAzurite } from '../support/azurite';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const azuriteOf = useAzurite();
const payment = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

async function rows(table: TableClient, filter?: string): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  try {
    for await (const r of table.listEntities<Record<string, unknown>>(filter ? { queryOptions: { filter } } : {})) out.push(r);
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404) throw error;
  }
  return out;
}

/** The payments functions on the real engine with a fresh fake provider and consumer tables; stopped by `run`'s end. */
async function withRealEngine(
  options: { killAfterCharge?: (paymentId: string) => boolean; leaseMs?: number; design?: 'handoff' | 'hold' },
  run: (real: Awaited<ReturnType<typeof startRealEnginePayments>>, provider: FakePaymentProvider) => Promise<void>,
): Promise<void> {
  const provider = await FakePaymentProvider.start();
  const prefix = `t${Date.now().toString(36)}`;
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    PAYMENT_PROVIDER_URL: provider.url,
    PAYMENT_PROVIDER_TIMEOUT_MS: '5000',
  });
  const table = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
  const real = await startRealEnginePayments({
    settings,
    overrides: { tableClient: table, leaseMs: options.leaseMs ?? 60_000, design: options.design ?? 'hold' },
    killAfterCharge: options.killAfterCharge,
  });
  try {
    await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
    await run(real, provider);
  } finally {
    await real.close();
    await provider.stop();
  }
}

/** True the first time it is asked about `paymentId`, false after (one kill, then the engine must recover). */
function onceFor(paymentId: string): (id: string) => boolean {
  let done = false;
  return (id) => id === paymentId && !done && (done = true);
}

/** Delivers until the trigger returns (a throw abandons the message: Service Bus redelivers it, deliveryCount + 1). */
async function deliverUntilCompleted(real: Awaited<ReturnType<typeof startRealEnginePayments>>, id: string, maxDeliveries = 10) {
  const errors: string[] = [];
  for (let deliveryCount = 1; deliveryCount <= maxDeliveries; deliveryCount++) {
    try {
      return { result: await real.deliver(JSON.stringify(payment(id)), { messageId: id, deliveryCount }), errors };
    } catch (error) {
      errors.push(String((error as Error)?.message ?? error));
    }
  }
  throw new Error(`not completed after ${maxDeliveries} deliveries: ${errors.join(' | ')}`);
}

realEngineTest(
  'real engine: a payment is charged once by the extension-run orchestration, entity and activity; its history is in the task hub; a duplicate is answered from the record',
  () =>
    withRealEngine({}, async (real, provider) => {
      const first = await real.deliver(JSON.stringify(payment('pay-real-1')), { messageId: 'pay-real-1', deliveryCount: 1 });
      expect(first).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
      const again = await real.deliver(JSON.stringify(payment('pay-real-1')), { messageId: 'pay-real-1', deliveryCount: 2 });
      expect(again).toMatchObject({ outcome: 'duplicate', result: first.outcome === 'processed' ? first.result : {} });
      expect(provider.charges.filter((c) => c.paymentId === 'pay-real-1')).toHaveLength(1);

      // The engine's own records: the instance completed, its history in <hub>History, the entity completed.
      const record = (await real.parts.store.get(keyFromMessageId('payments', 'pay-real-1')))!;
      const entityKey = chargeEntityKey(record.recordId, record.createdAtMs, record.digest);
      const history = await rows(real.backend.hubTable('History'), `PartitionKey eq 'payment-${entityKey}'`);
      const events = history.map((r) => String(r.EventType));
      expect(events).toEqual(expect.arrayContaining(['ExecutionStarted', 'TaskScheduled', 'TaskCompleted', 'EventSent', 'EventRaised', 'ExecutionCompleted']));
      const instance = (await rows(real.backend.hubTable('Instances'), `PartitionKey eq 'payment-${entityKey}'`))[0];
      expect(instance.RuntimeStatus).toBe('Completed');
      expect(await real.workflow.entityState(entityKey)).toMatchObject({ status: 'completed', attempt: 1, result: { status: 'succeeded' } });
      expect(await real.backend.store.unfinishedInstances()).toEqual([]);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  'real engine: the host is killed after the provider charged (before the engine recorded the result) and restarted; the engine runs the activity again with the same key; charged once',
  () =>
    withRealEngine({ killAfterCharge: onceFor('pay-kill-1'), leaseMs: 20_000 }, async (real, provider) => {
      const { result } = await deliverUntilCompleted(real, 'pay-kill-1');
      expect(result).toMatchObject({ result: { status: 'succeeded' } });
      expect(real.backend.counters.crashes).toBe(1);
      expect(real.backend.engine.counters.kills).toBeGreaterThanOrEqual(1);
      expect(real.backend.engine.counters.starts).toBeGreaterThanOrEqual(2);
      // The provider was called again with the same key after the restart (a replay, 200), and charged once.
      expect(provider.rawCalls).toBeGreaterThanOrEqual(2);
      expect(provider.keysByPayment.get('pay-kill-1')).toEqual(new Set(['pay-kill-1']));
      expect(provider.charges.filter((c) => c.paymentId === 'pay-kill-1')).toHaveLength(1);
      const record = (await real.parts.store.get(keyFromMessageId('payments', 'pay-kill-1')))!;
      expect(record.status).toBe('COMPLETED');
    }),
  REAL_ENGINE_TIMEOUT_MS,
);
