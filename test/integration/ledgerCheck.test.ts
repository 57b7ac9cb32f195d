/**
 * The ledger check (src/app/ledgerCheckTimer.ts, src/payments/ledgerCheck.ts) on Azurite and the fake provider over
 * loopback: payments run through the app's handoff code (the payments rig's in-process executor), one record made to
 * disagree with the provider (its run's record write turned into `failed` while the provider charged), then the
 * check's ticks against the provider's list: exactly that charge reported (a row the key console lists, an error log
 * naming the key and the charge, the metric), the checkpoint advanced, and a second tick reports nothing new. Also the
 * provider client's list against the fake provider: paging by cursor, and 404 read as "no list offered".
 */
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import type { InvocationContext, Timer } from '@azure/functions';
import { ledgerCheckFromSettings, runLedgerCheck, type LedgerCheckOn } from '../../src/app/ledgerCheckTimer';
import { loadSettings } from '../../src/config/settings';
import { listDiscrepancies, readLedgerCheckpoint, writeLedgerCheckpoint } from '../../src/payments/ledgerRows';
import { ChargeListUnsupportedError, PaymentProviderClient, TransientProviderError } from '../../src/payments/PaymentProviderClient';
import { MetricNames } from '../../src/telemetry/Telemetry';
import type { ChargeResult } from '../../src/payments/schema';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startPaymentsRig, type PaymentsRig } from '../../tools/local/paymentsRig';
import { useAzurite } from '../support/azurite';
import { inMemoryTelemetry } from '../support/telemetry';

const azuriteOf = useAzurite();
let provider: FakePaymentProvider;
let rig: PaymentsRig | undefined;
afterEach(async () => {
  await rig?.workflow.stop?.();
  rig = undefined;
  await provider?.stop();
});

const RETRY = { budgetMs: 60_000, firstDelayMs: 200, maxDelayMs: 1_000, callLeaseMs: 1_500 };
const body = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

describe('ledger check on Azurite and the fake provider', () => {
  test('one record that disagrees with the provider is exactly the discrepancy reported; the checkpoint advances; a second tick reports nothing new', async () => {
    let nowMs = Date.UTC(2026, 11, 1);
    const clock = { nowMs: () => nowMs };
    provider = await FakePaymentProvider.start({ clock: () => nowMs });
    const recorded = inMemoryTelemetry();
    const r = await startPaymentsRig({
      tableConnectionString: azuriteOf().connectionString,
      providerUrl: provider.url,
      design: 'handoff',
      telemetry: recorded.telemetry,
      restartDelayMs: 20,
      leaseMs: 5_000,
      retry: RETRY,
    });
    rig = r;
    // The deliberate mistake: the run's record write for pay-l3 says `failed` although the provider charged it.
    const failedRecord: ChargeResult = { status: 'failed', reason: 'injected: the record says failed' };
    const complete = r.store.complete.bind(r.store);
    r.store.complete = async (claim, result, effects, options) => complete(claim, claim.key.key === 'pay-l3' ? failedRecord : result, effects, options);
    const startMs = nowMs;
    const ids = ['pay-l1', 'pay-l2', 'pay-l3', 'pay-l4', 'pay-l5'];
    for (const id of ids) {
      expect(await r.deliver(body(id), { messageId: id, deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
      nowMs += 1_000;
    }
    await r.workflow.drain();
    expect(provider.effectiveCharges).toBe(5);
    const charged = provider.charges.find((c) => c.paymentId === 'pay-l3')!;
    expect(await r.store.get(keyFromMessageId('payments', 'pay-l3'))).toMatchObject({ status: 'COMPLETED', result: { status: 'failed' } });

    nowMs += 60_000;
    const on: LedgerCheckOn = {
      provider: new PaymentProviderClient({ baseUrl: provider.url, timeoutMs: 5_000 }),
      table: r.store.client,
      record: (paymentId) => r.store.get(keyFromMessageId('payments', paymentId)),
      telemetry: recorded.telemetry,
      clock,
      delayMs: 0,
      retentionMs: 30 * 86_400_000,
      graceMs: 8 * 86_400_000,
      maxPages: 10,
      budgetMs: 60_000,
      timeoutMs: 5_000,
      initialFromMs: startMs - 1,
    };
    const listsBefore = provider.listRequests;
    const first = await runLedgerCheck(on);
    expect(first.saved).toBe(true);
    expect(first.matched).toBe(4);
    expect(first.discrepancies.map((d) => [d.paymentId, d.chargeId, d.reason])).toEqual([['pay-l3', charged.chargeId, 'record-not-succeeded']]);
    expect(provider.listRequests - listsBefore).toBe(1); // five charges: one page of 100
    // Where the key console finds it, and as the alert sees it.
    expect((await listDiscrepancies(r.store.client)).map((d) => [d.paymentId, d.chargeId])).toEqual([['pay-l3', charged.chargeId]]);
    expect(await listDiscrepancies(r.store.client, { paymentId: 'pay-l1' })).toEqual([]);
    expect(await recorded.counter(MetricNames.ledgerDiscrepancies)).toBe(1);
    expect(await recorded.counter(MetricNames.ledgerChecked)).toBe(4);
    const errorLines = recorded.logs().filter((l) => l.severity === 'ERROR' && l.attributes.outcome === 'ledger-discrepancy');
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0].attributes).toMatchObject({ idempotencyKey: 'pay-l3', chargeId: charged.chargeId, reason: 'record-not-succeeded' });
    expect(errorLines[0].body).toMatch(
      new RegExp(
        `^payments ledger check: charge ${charged.chargeId} under pay-l3 is not held by a succeeded record \\(record-not-succeeded: .+\\): check the charge at the provider, then refund it or correct the record$`,
      ),
    );
    expect(await recorded.counter(MetricNames.ledgerDiscrepancies, { consumer: 'payments', reason: 'record-not-succeeded' })).toBe(1);
    expect(await recorded.counter(MetricNames.ledgerChecked, { consumer: 'payments', outcome: 'matched' })).toBe(4);
    expect(
      recorded
        .logs()
        .filter((l) => l.attributes.outcome === 'ledger-checked')
        .map((l) => l.body),
    ).toEqual(['payments ledger check: 5 charge(s) checked (4 matched, 0 not charged, 1 discrepancy), 0 undecided, 0 of other shards, 1 page(s)']);
    expect(JSON.stringify(errorLines[0])).not.toContain('cust-1'); // never the payload
    // The checkpoint moved to the window's end.
    expect((await readLedgerCheckpoint(r.store.client, 5_000)).checkpoint).toEqual({ fromMs: nowMs, pending: [] });

    // A second tick: one more correct payment, nothing new reported.
    expect(await r.deliver(body('pay-l6'), { messageId: 'pay-l6', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
    await r.workflow.drain();
    nowMs += 60_000;
    const second = await runLedgerCheck(on);
    expect(second).toMatchObject({ saved: true, matched: 1, discrepancies: [], alreadyReported: 0 });
    expect(await listDiscrepancies(r.store.client)).toHaveLength(1);
    expect(await recorded.counter(MetricNames.ledgerDiscrepancies)).toBe(1);
  });

  test('two overlapping ticks: the checkpoint is written conditionally, so only one of them moves it', async () => {
    provider = await FakePaymentProvider.start();
    const r = await startPaymentsRig({ tableConnectionString: azuriteOf().connectionString, providerUrl: provider.url, design: 'handoff', retry: RETRY });
    rig = r;
    const read = await readLedgerCheckpoint(r.store.client, 5_000);
    expect(read).toEqual({ checkpoint: undefined, etag: undefined });
    const first = await writeLedgerCheckpoint(r.store.client, undefined, { fromMs: 10, pending: [] }, 1, 5_000);
    const second = await writeLedgerCheckpoint(r.store.client, undefined, { fromMs: 20, pending: [] }, 1, 5_000);
    expect([first, second]).toEqual([true, false]);
    const now = await readLedgerCheckpoint(r.store.client, 5_000);
    expect(await writeLedgerCheckpoint(r.store.client, now.etag, { fromMs: 30, pending: [] }, 2, 5_000)).toBe(true);
    expect(await writeLedgerCheckpoint(r.store.client, now.etag, { fromMs: 40, pending: [] }, 2, 5_000)).toBe(false);
    expect((await readLedgerCheckpoint(r.store.client, 5_000)).checkpoint?.fromMs).toBe(30);
  });
});

describe("the ledger check timer's handler from the settings, on Azurite", () => {
  const contextOf = () => {
    const lines: Array<[string, string]> = [];
    const context = {
      log: (line: string) => void lines.push(['log', line]),
      warn: (line: string) => void lines.push(['warn', line]),
      error: (line: string) => void lines.push(['error', line]),
    } as unknown as InvocationContext;
    return { context, lines };
  };
  const settings = (extra: Record<string, string> = {}) =>
    loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
      PAYMENT_PROVIDER_LEDGER: 'list',
      ...extra,
    });

  // The app's table, as the deployment creates it.
  beforeEach(async () => {
    const { TableClient } = await import('@azure/data-tables');
    const table = TableClient.fromConnectionString(azuriteOf().connectionString, settings().IDEMPOTENCY_TABLE_NAME, { allowInsecureConnection: true });
    await table.createTable();
  });

  test('a tick: the window checked, the checkpoint saved, the counts logged; a tick past due says so', async () => {
    const recorded = inMemoryTelemetry();
    const windows: Array<{ fromMs: number; toMs: number }> = [];
    const nowMs = Date.UTC(2026, 11, 7, 12);
    const delayed = settings({ PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS: '600' });
    const handler = ledgerCheckFromSettings(delayed, {
      telemetry: recorded.telemetry,
      clock: { nowMs: () => nowMs },
      provider: { listCharges: async (window) => (windows.push(window), { charges: [] }) },
    });
    const { context, lines } = contextOf();
    await handler({ isPastDue: true } as Timer, context);
    // A first tick (no checkpoint): from a day before the window's end, which the list's delay holds back.
    expect(windows).toEqual([{ fromMs: nowMs - 600_000 - 86_400_000, toMs: nowMs - 600_000 }]);
    expect(lines[0]).toEqual(['warn', 'ledger check timer is past due']);
    expect(
      recorded
        .logs()
        .filter((l) => l.attributes.outcome === 'ledger-checked')
        .map((l) => [l.severity, l.body]),
    ).toEqual([['INFO', 'payments ledger check: 0 charge(s) checked (0 matched, 0 not charged, 0 discrepancies), 0 undecided, 0 of other shards, 1 page(s)']]);
    expect(lines.filter(([level]) => level === 'error')).toEqual([]);
  });

  test('a provider that offers no list: the tick fails naming the setting to change, and throws (the host counts the failure)', async () => {
    const { ChargeListUnsupportedError: Unsupported } = await import('../../src/payments/PaymentProviderClient');
    const handler = ledgerCheckFromSettings(settings(), {
      telemetry: inMemoryTelemetry().telemetry,
      provider: {
        listCharges: async () => {
          throw new Unsupported(404);
        },
      },
    });
    const { context, lines } = contextOf();
    await expect(handler({ isPastDue: false } as Timer, context)).rejects.toBeInstanceOf(Unsupported);
    expect(lines).toEqual([
      [
        'error',
        'payments ledger check failed (set PAYMENT_PROVIDER_LEDGER=none for a provider without a list): ChargeListUnsupportedError: payment provider answered 404 to the charge list: it offers no list of charges by time (PAYMENT_PROVIDER_LEDGER=list is wrong)',
      ],
    ]);
  });
});

describe('the provider client lists charges (fake provider over loopback)', () => {
  const payment = (id: string) => ({ paymentId: id, customerId: 'c', amount: 100, currency: 'EUR' });

  test('pages by cursor in (created, id) order until has_more is false, each charge once, only the window', async () => {
    let nowMs = 1_000_000;
    provider = await FakePaymentProvider.start({ clock: () => nowMs });
    const client = new PaymentProviderClient({ baseUrl: provider.url, timeoutMs: 5_000 });
    for (let i = 0; i < 7; i++) {
      await client.charge(payment(`pay-${i}`), `pay-${i}`);
      if (i % 2 === 1) nowMs += 10; // pairs share a created time: the id orders them
    }
    nowMs += 10;
    await client.charge(payment('pay-late'), 'pay-late'); // created at 1_000_040: outside the window below
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listCharges({ fromMs: 1_000_000, toMs: 1_000_040 }, cursor, 3);
      pages++;
      seen.push(...page.charges.map((c) => c.idempotencyKey!));
      for (const c of page.charges) expect(c).toMatchObject({ status: 'succeeded', amount: 100, currency: 'EUR' });
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual(['pay-0', 'pay-1', 'pay-2', 'pay-3', 'pay-4', 'pay-5', 'pay-6']);
    const created = provider.charges.filter((c) => c.paymentId !== 'pay-late');
    const order = [...created].sort((a, b) => a.createdMs - b.createdMs || (a.chargeId < b.chargeId ? -1 : 1)).map((c) => c.paymentId);
    expect(seen).toEqual(order);
  });

  test('a provider without a list answers 404: ChargeListUnsupportedError (not retried); a 5xx is transient', async () => {
    provider = await FakePaymentProvider.start({ list: 'none' });
    const client = new PaymentProviderClient({ baseUrl: provider.url, timeoutMs: 5_000 });
    await expect(client.listCharges({ fromMs: 0, toMs: 10 })).rejects.toBeInstanceOf(ChargeListUnsupportedError);
    await provider.stop();
    provider = await FakePaymentProvider.start();
    provider.injectNextLookup('error5xx');
    const listing = new PaymentProviderClient({ baseUrl: provider.url, timeoutMs: 5_000 });
    await expect(listing.listCharges({ fromMs: 0, toMs: 10 })).rejects.toBeInstanceOf(TransientProviderError);
    await expect(listing.listCharges({ fromMs: 0, toMs: 10 })).resolves.toEqual({ charges: [] });
  });
});
