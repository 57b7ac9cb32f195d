/**
 * Look before you charge again (docs/DESIGN.md): on a provider that remembers no keys (`keyMemoryMs` 0: every call
 * with a finished key charges again), a provider call that may have charged is never repeated blind. The payments
 * functions as registered, the charge run by the local Durable backend (the SDK's replay) on Azurite, the fake
 * provider's ledger as the judge; both designs. `off` shows the tests can fail: the same faults charge twice.
 */
import type { PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import type { ProviderLookupMode } from '../../src/payments/providerLookup';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import type { DurableCrashPoint } from '../../tools/local/durable/LocalDurableBackend';
import { startPaymentsRig, type PaymentsRig } from '../../tools/local/paymentsRig';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();
let provider: FakePaymentProvider;
let rig: PaymentsRig | undefined;

beforeEach(async () => {
  provider = await FakePaymentProvider.start({ keyMemoryMs: 0 });
});
afterEach(async () => {
  await rig?.workflow.stop?.();
  rig = undefined;
  await provider.stop();
});

const payment = (id: string) => JSON.stringify({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

async function lookupRig(design: PaymentsDesign, providerLookup: ProviderLookupMode, crashBefore?: (point: DurableCrashPoint, id: string) => boolean) {
  rig = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    providerTimeoutMs: 1_000,
    durable: 'registered',
    design,
    providerLookup,
    durableCrashBefore: crashBefore,
    restartDelayMs: 20,
    leaseMs: 10_000,
    timerScale: 1 / 100,
    retry: { budgetMs: 60_000, firstDelayMs: 200, maxDelayMs: 1_000 },
  });
  return rig;
}

/** One delivery, then (handoff) the run to its end; the charge result the record holds. */
async function chargeOnce(r: PaymentsRig & { workflow: { drain: () => Promise<void> } }, id: string) {
  const delivered = await r.deliver(payment(id), { messageId: id, deliveryCount: 1 });
  await r.workflow.drain();
  const record = await r.store.get({ consumer: 'payments', key: id });
  return { delivered, record };
}

describe.each(['hold', 'handoff'] as const)('%s design, provider without key memory', (design) => {
  test('charge-then-drop, then the run retries: uncertain looks the charge up and charges once (the record has that charge)', async () => {
    const r = await lookupRig(design, 'uncertain');
    provider.injectNext('chargeThenDrop');
    const { record } = await chargeOnce(r, `pay-${design}-u`);
    expect(provider.chargesFor(`pay-${design}-u`)).toBe(1);
    expect(provider.lookups).toBe(1); // the retry looked; the first call did not
    expect(record).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded', chargeId: provider.charges[0].chargeId } });
  }, 60_000);

  test('off: the same retry charges blind, and the provider charges twice (what the look-up prevents)', async () => {
    const r = await lookupRig(design, 'off');
    provider.injectNext('chargeThenDrop');
    await chargeOnce(r, `pay-${design}-off`);
    expect(provider.chargesFor(`pay-${design}-off`)).toBe(2);
    expect(provider.lookups).toBe(0);
  }, 60_000);

  test('a failing look-up (503) is a transient failure: the run retries it, then finds the charge; still one charge', async () => {
    const r = await lookupRig(design, 'uncertain');
    provider.injectNext('chargeThenDrop');
    provider.injectNextLookup('error5xx');
    const { record } = await chargeOnce(r, `pay-${design}-l5`);
    expect(provider.chargesFor(`pay-${design}-l5`)).toBe(1);
    expect(provider.lookups).toBe(2);
    expect(record).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded' } });
  }, 60_000);

  test('a host crash after the activity charged (its result not recorded): the activity runs again with its first input; always looks, uncertain cannot', async () => {
    for (const [mode, charges] of [
      ['always', 1],
      ['uncertain', 2],
    ] as const) {
      let crashed = false;
      const r = await lookupRig(design, mode, (point) => point === 'after-activity' && !crashed && (crashed = true));
      const id = `pay-${design}-crash-${mode}`;
      await chargeOnce(r, id);
      expect(crashed).toBe(true);
      expect([mode, provider.chargesFor(id)]).toEqual([mode, charges]);
      await r.workflow.stop?.();
      rig = undefined;
    }
  }, 120_000);
});
