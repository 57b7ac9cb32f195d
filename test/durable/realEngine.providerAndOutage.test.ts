/**
 * Issue 34 items 3 and 5 on the REAL Durable engine (tools/durable-host: the Durable Task extension with its Azure
 * Storage provider, on Azurite), through the registered trigger:
 *
 * - a Stripe-shaped provider (keys remembered, no look-up: `GET /v1/charges?idempotency_key=` answers 404), declared
 *   as such (`PAYMENT_PROVIDER_LOOKUP=none`, `PAYMENT_PROVIDER_KEY_MEMORY_HOURS=24`): charge-then-drop, 503, a timeout,
 *   a host kill after the charge and duplicates are all re-sent with the same key inside its memory: every payment
 *   charged once, none held, no look-up asked, no run left unfinished or failed;
 * - a storage outage of the consumer's table while deliveries arrive: each delivery waits inside its invocation
 *   (`messages.store_outage.waits`) and is acknowledged at its first delivery once the store answers again: no
 *   delivery spent, one charge each.
 * Tests run one after another (the extension's fixed port 17071; `DurableEngineHost` holds a machine-wide lock).
 */
import { TableClient } from '@azure/data-tables';
import { loadSettings } from '../../src/config/settings';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startRealEnginePayments } from '../../tools/local/durable/realEnginePayments';
import { TcpProxy } from '../../tools/local/TcpProxy';
import { useAzurite } from '../support/azurite';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';
import { inMemoryTelemetry } from '../support/telemetry';

const azuriteOf = useAzurite();
const payment = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });
const body = (id: string) => JSON.stringify(payment(id));
type Real = Awaited<ReturnType<typeof startRealEnginePayments>>;

async function withEngine(
  options: { provider: FakePaymentProvider; tableConnectionString: string; killAfterCharge?: (paymentId: string) => boolean },
  run: (real: Real, telemetry: ReturnType<typeof inMemoryTelemetry>) => Promise<void>,
): Promise<void> {
  const prefix = `c${Date.now().toString(36)}`;
  // The settings' defaults declare the provider: no look-up, keys kept 24 h (Stripe's).
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: options.tableConnectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    PAYMENT_PROVIDER_URL: options.provider.url,
    PAYMENT_PROVIDER_TIMEOUT_MS: '1000',
  });
  expect([settings.PAYMENT_PROVIDER_LOOKUP, settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS]).toEqual(['none', 24]);
  const t = inMemoryTelemetry();
  const table = (name: string) =>
    TableClient.fromConnectionString(options.tableConnectionString, `${prefix}${name}`, {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 1, retryDelayInMs: 50, maxRetryDelayInMs: 200 },
    });
  const real = await startRealEnginePayments({
    settings,
    overrides: {
      tableClient: table,
      leaseMs: 10_000,
      design: 'handoff',
      retry: { budgetMs: 120_000, firstDelayMs: 500, maxDelayMs: 2_000 },
      telemetry: t.telemetry,
    },
    killAfterCharge: options.killAfterCharge,
  });
  try {
    await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
    await run(real, t);
  } finally {
    await real.close();
    await t.shutdown();
  }
}

/** Every payment's record completed with the provider's only charge for it. */
async function expectChargedOnce(real: Real, provider: FakePaymentProvider, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const record = await real.parts.store.get(keyFromMessageId('payments', id));
    expect([id, record?.status, (record?.result as { status?: string } | undefined)?.status]).toEqual([id, 'COMPLETED', 'succeeded']);
    expect([id, provider.chargesFor(id)]).toEqual([id, 1]);
    expect((record!.result as { chargeId: string }).chargeId).toBe(provider.charges.find((c) => c.paymentId === id)!.chargeId);
  }
  expect(await real.backend.store.unfinishedInstances()).toEqual([]);
  expect(await real.backend.store.failedInstances()).toEqual([]);
}

realEngineTest(
  'real engine, a Stripe-shaped provider without a look-up (404), declared none/24 h: lost answers, 503s, a timeout, a host kill after the charge and duplicates are re-sent with the same key: every payment charged once, none held, no look-up asked, nothing unfinished',
  async () => {
    const provider = await FakePaymentProvider.start({ lookup: 'none' });
    let killed = false;
    try {
      await withEngine(
        { provider, tableConnectionString: azuriteOf().connectionString, killAfterCharge: (id) => id === 'pay-s4' && !killed && (killed = true) },
        async (real, t) => {
          const ids = Array.from({ length: 8 }, (_, i) => `pay-s${i + 1}`);
          provider.injectNext('chargeThenDrop', 'error5xx', 'timeout'); // the first three calls: pay-s1, s2, s3
          for (const id of ids.slice(0, 3)) await real.deliver(body(id), { messageId: id, deliveryCount: 1 });
          // The rest with a duplicate each, delivered concurrently.
          const answers = await Promise.all(ids.slice(3).flatMap((id) => [1, 2].map((n) => real.deliver(body(id), { messageId: id, deliveryCount: n }))));
          expect(answers.every((a) => ['handedOff', 'inProgress', 'duplicate'].includes(a.outcome))).toBe(true);
          await real.workflow.drain(300_000);
          expect(killed).toBe(true);
          await expectChargedOnce(real, provider, ids);
          expect(provider.lookups).toBe(0);
          expect(provider.faultsInjected).toMatchObject({ chargeThenDrop: 1, error5xx: 1, timeout: 1 });
          expect(await t.counter('payments.held')).toBe(0);
        },
      );
    } finally {
      await provider.stop();
    }
  },
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  "real engine, a storage outage of the consumer's table while deliveries arrive: each waits inside its invocation and is acknowledged at its first delivery once the store answers; one charge each",
  async () => {
    const provider = await FakePaymentProvider.start();
    const proxy = await TcpProxy.start(azuriteOf().port);
    const viaProxy = azuriteOf().connectionString.replace(`:${azuriteOf().port}/`, `:${proxy.port}/`);
    try {
      await withEngine({ provider, tableConnectionString: viaProxy }, async (real, t) => {
        expect(await real.deliver(body('pay-o1'), { messageId: 'pay-o1', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
        await real.workflow.drain(300_000);
        proxy.cut();
        const ids = ['pay-o2', 'pay-o3', 'pay-o4'];
        const settled: string[] = [];
        const deliveries = ids.map((id) =>
          real.deliver(body(id), { messageId: id, deliveryCount: 1 }).then(
            (answer) => (settled.push(id), answer),
            (error: unknown) => (settled.push(id), Promise.reject(error as Error)),
          ),
        );
        // The store stays down until every delivery has waited for it three times (1 + 2 + 4 s at least).
        while ((await t.counter('messages.store_outage.waits', { consumer: 'payments' })) < 3 * ids.length) {
          expect(settled).toEqual([]); // none abandoned meanwhile: no delivery spent
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(settled).toEqual([]);
        proxy.restore();
        const answers = await Promise.all(deliveries);
        expect(answers.map((a) => a.outcome)).toEqual(['handedOff', 'handedOff', 'handedOff']);
        expect(proxy.resets).toBeGreaterThan(0);
        await real.workflow.drain(300_000);
        await expectChargedOnce(real, provider, ['pay-o1', ...ids]);
        expect(t.logs().filter((l) => /the store answers again after \d+ ms/.test(String(l.body)))).toHaveLength(ids.length);
      });
    } finally {
      await proxy.stop();
      await provider.stop();
    }
  },
  REAL_ENGINE_TIMEOUT_MS,
);
