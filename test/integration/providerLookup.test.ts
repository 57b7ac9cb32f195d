/**
 * Look before you charge again (docs/DESIGN.md), with the provider's capability declared
 * (`PAYMENT_PROVIDER_LOOKUP`, `PAYMENT_PROVIDER_KEY_MEMORY_HOURS`): on a provider that remembers no keys
 * (`keyMemoryMs` 0: every call with a finished key charges again), a provider call that may have charged is never
 * repeated blind when the declaration is true. The payments handler, the charge run by the in-process executor (the
 * app's orchestration and activity bodies) on Azurite, the fake provider's ledger as the judge; both designs. A false
 * declaration (24 h of memory the provider does not have) shows the tests can fail: the same faults charge twice.
 * Then a provider without a look-up (404, as Stripe): a look-up it does not offer holds the payment and is reported
 * once; where neither key memory nor a look-up can decide, the payment is held for an operator, never charged blind.
 */
import { payloadDigest } from 'azure-functions-idempotency/internal';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { paymentRow } from '../../src/payments/paymentRow';
import type { PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import type { ProviderLookup } from '../../src/payments/providerLookup';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import type { RunStep } from '../../tools/local/LocalChargeWorkflow';
import { JumpClock } from '../../tools/local/JumpClock';
import { startPaymentsRig, type PaymentsRig } from '../../tools/local/paymentsRig';
import { useAzurite } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

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

const paymentOf = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });
const payment = paymentOf;
/** The declaration that is true of the provider (no memory, a look-up), and a false one (24 h of memory, none). */
const TRUE = { lookup: 'by-key', hours: 0 } as const;
const FALSE = { lookup: 'none', hours: 24 } as const;

async function lookupRig(
  design: PaymentsDesign,
  declared: { lookup: ProviderLookup; hours: number },
  crashBefore?: (step: RunStep, id: string) => boolean,
  extra: Partial<Parameters<typeof startPaymentsRig>[0]> = {},
) {
  rig = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    providerTimeoutMs: 1_000,
    design,
    providerLookup: declared.lookup,
    providerKeyMemoryHours: declared.hours,
    crashBefore,
    restartDelayMs: 20,
    leaseMs: 10_000,
    retry: { budgetMs: 60_000, firstDelayMs: 200, maxDelayMs: 1_000, callLeaseMs: 1_500 },
    ...extra,
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
  test('charge-then-drop, then the run retries: every call looks the charge up first, one charge (the record has that charge)', async () => {
    const r = await lookupRig(design, TRUE);
    provider.injectNext('chargeThenDrop');
    const { record } = await chargeOnce(r, `pay-${design}-u`);
    expect(provider.chargesFor(`pay-${design}-u`)).toBe(1);
    expect(provider.lookups).toBe(2); // no key memory: the first call looked too (found none), the retry found the charge
    expect(record).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded', chargeId: provider.charges[0].chargeId } });
  }, 60_000);

  test('a false declaration (24 h of key memory): the same retry is re-sent with the key, and the provider charges twice', async () => {
    const r = await lookupRig(design, FALSE);
    provider.injectNext('chargeThenDrop');
    await chargeOnce(r, `pay-${design}-off`);
    expect(provider.chargesFor(`pay-${design}-off`)).toBe(2);
    expect(provider.lookups).toBe(0);
  }, 60_000);

  test('a failing look-up (503) is a transient failure: the run retries it, then finds the charge; still one charge', async () => {
    const r = await lookupRig(design, TRUE);
    provider.injectNext('chargeThenDrop');
    provider.injectNextLookup('error5xx');
    const { record } = await chargeOnce(r, `pay-${design}-l5`);
    expect(provider.chargesFor(`pay-${design}-l5`)).toBe(1);
    expect(provider.lookups).toBe(3); // 503, then none found (charged, dropped), then found
    expect(record).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded' } });
  }, 60_000);

  // The executor's crash model: the run restarts and its entity's begin says an earlier call may have charged. The
  // engine's own (it re-runs the activity with its first input): realEngine.handoff "a provider that keeps no keys".
  // Handoff version 2: the activity wrote the record before the crash, and the restarted run's activity finds it
  // completed (the fence before the call, `recordMovedOn`): no second call even under a false declaration. The holding
  // design's activity has no record to look at: a false declaration charges twice there.
  test('a host crash after the activity charged (its result not recorded): the charge is called again only after a look-up; a false declaration cannot', async () => {
    for (const [mode, charges] of [
      [TRUE, 1],
      [FALSE, design === 'handoff' ? 1 : 2],
    ] as const) {
      let crashed = false;
      const r = await lookupRig(design, mode, (step) => step === 'after-activity:charge' && !crashed && (crashed = true));
      const id = `pay-${design}-crash-${mode.lookup}`;
      await chargeOnce(r, id);
      expect(crashed).toBe(true);
      expect([mode, provider.chargesFor(id)]).toEqual([mode, charges]);
      await r.workflow.stop?.();
      rig = undefined;
    }
  }, 120_000);
});

describe.each(['hold', 'handoff'] as const)('%s design, a provider without a look-up (404, as Stripe)', (design) => {
  let stripe: FakePaymentProvider;
  beforeEach(async () => {
    stripe = await FakePaymentProvider.start({ lookup: 'none' });
  });
  afterEach(async () => {
    await stripe.stop();
  });

  test('a look-up declared but not offered: each payment that needs one is held with the reason, never charged, never retried; the configuration error is logged once, counted each time', async () => {
    const t = inMemoryTelemetry();
    // No key memory declared: every call must look up first, and the provider answers 404.
    const r = await lookupRig(design, TRUE, undefined, { providerUrl: stripe.url, telemetry: t.telemetry });
    for (const id of [`pay-${design}-404a`, `pay-${design}-404b`]) {
      const { record } = await chargeOnce(r, id);
      expect(record).toMatchObject({ status: 'COMPLETED', result: { status: 'failed', code: 'held-for-operator' } });
      expect((record!.result as { reason: string }).reason).toMatch(/held for an operator: .*answered 404 to a charge look-up/);
    }
    expect(stripe.lookups).toBe(2); // once each: a 404 is not retried
    expect(stripe.rawCalls).toBe(0);
    expect(await t.counter('payments.provider.lookup_unsupported')).toBe(2);
    expect(await t.counter('payments.held')).toBe(2);
    expect(t.logs().filter((l) => /configuration error: the provider answered 404/.test(String(l.body)))).toHaveLength(1);
    await t.shutdown();
  }, 60_000);

  test('a retry past the declared key memory with no look-up: held for an operator with its reason, no second call', async () => {
    const t = inMemoryTelemetry();
    const clock = new JumpClock();
    const r = await lookupRig(design, FALSE, undefined, { providerUrl: stripe.url, telemetry: t.telemetry, clock });
    const id = `pay-${design}-old`;
    // An earlier delivery claimed the key 25 hours ago and died before starting its charge; this one takes it over.
    await r.store.claim(keyFromMessageId('payments', id), payloadDigest(paymentOf(id)), { effects: [paymentRow(paymentOf(id), 'pending')] });
    clock.jump(25 * 3_600_000);
    // The takeover's entity is idle (the dead delivery may have charged): its first call is already uncertain, and
    // 25 h after the key was first used, past its memory with no look-up, it is held before any call.
    const { record } = await chargeOnce(r, id);
    expect(record).toMatchObject({ status: 'COMPLETED', attempt: 2, result: { status: 'failed', code: 'held-for-operator' } });
    expect((record!.result as { reason: string }).reason).toMatch(/1500 min old.*PAYMENT_PROVIDER_LOOKUP is none/);
    expect([stripe.rawCalls, stripe.lookups, stripe.chargesFor(id)]).toEqual([0, 0, 0]);
    expect(await t.counter('payments.held')).toBe(1);
    await t.shutdown();
  }, 60_000);
});
