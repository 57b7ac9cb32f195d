/**
 * Durable's own records have a lifecycle: the expiry timer (registered as src/functions/expiryTimer.ts
 * registers it: a timer with a Durable client input) purges charge orchestrations and their entities older than
 * the dedup retention, on the real engine; proven by the task hub's Instances and History rows before and after.
 */
import { app } from '@azure/functions';
import { TableClient } from '@azure/data-tables';
import * as df from 'durable-functions';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { loadSettings } from '../../src/config/settings';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startRealEnginePayments } from '../../tools/local/durable/realEnginePayments';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { useAzurite } from '../support/azurite';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const azuriteOf = useAzurite();
const DAY_MS = 86_400_000;

async function partitionKeys(table: TableClient): Promise<string[]> {
  const keys = new Set<string>();
  for await (const r of table.listEntities<{ partitionKey: string }>({ queryOptions: { select: ['PartitionKey'] } })) keys.add(r.partitionKey);
  return [...keys].sort();
}

realEngineTest(
  'purge: the expiry timer removes final charge orchestrations and their entities older than the retention from the task hub (Instances and History rows), and nothing newer',
  async () => {
    const provider = await FakePaymentProvider.start();
    const prefix = `p${Date.now().toString(36)}`;
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      IDEMPOTENCY_CACHE_SIZE: '0',
      PAYMENT_PROVIDER_URL: provider.url,
      PAYMENT_PROVIDER_TIMEOUT_MS: '5000',
    });
    const table = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
    const real = await startRealEnginePayments({ settings, overrides: { tableClient: table, leaseMs: 60_000, design: 'hold' } });
    try {
      await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
      for (const id of ['pay-old-1', 'pay-old-2']) {
        const body = JSON.stringify({ paymentId: id, customerId: 'cust-1', amount: 100, currency: 'EUR' });
        await expect(real.deliver(body, { messageId: id, deliveryCount: 1 })).resolves.toMatchObject({ outcome: 'processed' });
      }
      const instances = real.backend.hubTable('Instances');
      const history = real.backend.hubTable('History');
      const before = await partitionKeys(instances);
      expect(before.filter((k) => k.startsWith('payment-'))).toHaveLength(2);
      expect(before.filter((k) => k.startsWith('@paymentcharge@'))).toHaveLength(2);
      expect((await partitionKeys(history)).length).toBeGreaterThanOrEqual(4);

      // The timer as registered (a timer trigger with a Durable client input), invoked with the extension's client data.
      const tick = async (nowMs: number) => {
        const handler = expiryTimerFromSettings(settings, { tableClient: table, clock: { nowMs: () => nowMs } });
        const host = WorkerHost.load(() =>
          app.timer('expiryTimer', {
            schedule: '0 */15 * * * *',
            extraInputs: [df.input.durableClient()],
            handler: handler,
          }),
        );
        await host.invoke('expiryTimer', {
          inputData: [
            { name: host.bindingName('expiryTimer', 'timerTrigger'), data: { json: JSON.stringify({ isPastDue: false }) } },
            { name: host.bindingName('expiryTimer', 'durableClient'), data: { string: real.backend.engine.clientBindingData } },
          ],
        });
      };
      // Now: nothing is older than the retention, nothing goes.
      await tick(Date.now());
      expect(await partitionKeys(instances)).toEqual(before);
      // Past the retention (30 days): both charges' orchestrations, entities and histories go.
      await tick(Date.now() + 31 * DAY_MS);
      const after = await partitionKeys(instances);
      expect(after.filter((k) => k.startsWith('payment-') || k.startsWith('@paymentcharge@'))).toEqual([]);
      expect(await partitionKeys(history)).toEqual([]);
    } finally {
      await real.close();
      await provider.stop();
    }
  },
  REAL_ENGINE_TIMEOUT_MS,
);
