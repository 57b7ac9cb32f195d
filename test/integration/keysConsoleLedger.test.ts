import type { TableClient } from '@azure/data-tables';
import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency';
import { recordDiscrepancy } from '../../src/payments/ledgerRows';
import { paymentRow, finishedPaymentRow } from '../../src/payments/paymentRow';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';
import { runAppKeys } from '../../tools/operator/keys';
import { useAzurite } from '../support/azurite';
import { claimOf, tableRig, type ConsoleRig } from '../support/keysConsole';

/**
 * The key console's ledger commands (`npm run keys -- ledger`, tools/operator/ledgerCommand.ts) on Azurite: the
 * discrepancy rows the ledger check writes, listed; one shown beside its key's record by `keys show payments <id>`
 * (and for a key with no record at all); removed by `--resolve` with a reason. Never an amount, currency or customer.
 */
const azuriteOf = useAzurite();
let rig: ConsoleRig & { client: TableClient };
beforeAll(async () => {
  rig = await tableRig(azuriteOf());
});

const payment = (paymentId: string): PaymentRequested => ({ paymentId, customerId: 'SECRET-CUSTOMER', amount: 4242, currency: 'EUR' });

async function run(argv: readonly string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAppKeys(
    [...rig.connection, ...argv],
    { env: {}, clock: rig.clock, out: (l) => out.push(l), err: (l) => err.push(l) },
    async () => 'Completed',
  );
  return { code, out, err, text: [...out, ...err].join('\n') };
}

test("ledger: lists the discrepancies; keys show names the key's; --resolve removes one with a reason", async () => {
  const key = keyFromMessageId(PAYMENTS_CONSUMER, 'pay-k1');
  const result: ChargeResult = { status: 'failed', reason: 'provider 503 for 60 min' };
  const claim = claimOf(await rig.store.claim(key, payloadDigest(payment('pay-k1')), { effects: [paymentRow(payment('pay-k1'), 'pending')] }));
  await rig.store.complete(claim, result, [finishedPaymentRow(payment('pay-k1'), result)]);
  const at = Date.UTC(2026, 11, 1);
  expect(
    await recordDiscrepancy(
      rig.client,
      { paymentId: 'pay-k1', chargeId: 'ch_1', createdMs: at, reason: 'record-not-succeeded', detail: 'record completed failed' },
      at,
      5000,
    ),
  ).toBe(true);
  expect(
    await recordDiscrepancy(rig.client, { paymentId: 'pay-k1', chargeId: 'ch_1', createdMs: at, reason: 'record-not-succeeded', detail: 'again' }, at, 5000),
  ).toBe(false);
  await recordDiscrepancy(
    rig.client,
    { paymentId: 'pay-k2', chargeId: 'ch_2', createdMs: at, reason: 'no-record', detail: 'no payments record for the key' },
    at,
    5000,
  );

  const listed = await run(['ledger']);
  expect(listed.code).toBe(0);
  expect(listed.out[0]).toBe('2 ledger discrepancies');
  expect(listed.out.slice(1)).toEqual([
    expect.stringMatching(/^pay-k1 {2}ch_1 {2}record-not-succeeded: record completed failed/),
    expect.stringMatching(/^pay-k2 {2}ch_2 {2}no-record/),
  ]);
  const json = await run(['ledger', '--json']);
  expect(JSON.parse(json.out[0]).discrepancies.map((d: { chargeId: string }) => d.chargeId)).toEqual(['ch_1', 'ch_2']);

  const show = await run(['keys', 'show', 'payments', 'pay-k1']);
  expect(show.code).toBe(0);
  expect(show.text).toMatch(/ledger discrepancy: pay-k1 {2}ch_1 {2}record-not-succeeded/);
  expect(show.text).not.toMatch(/ch_2/);
  // A charge with no record: the package says there is none, the ledger line says what the provider did.
  const orphan = await run(['keys', 'show', 'payments', 'pay-k2']);
  expect(orphan.text).toMatch(/ledger discrepancy: pay-k2 {2}ch_2 {2}no-record/);
  expect((await run(['keys', 'show', 'payments', 'pay-k9'])).text).toMatch(/ledger check: no discrepancy for this key/);

  expect((await run(['ledger', '--resolve', 'pay-k1', 'ch_1'])).code).toBe(2); // no --reason
  expect((await run(['ledger', '--resolve', 'pay-k1', 'ch_1', '--reason', 'refunded', '--dry-run'])).out).toEqual([
    'would remove the ledger discrepancy of pay-k1, charge ch_1 (dry run)',
  ]);
  const resolved = await run(['ledger', '--resolve', 'pay-k1', 'ch_1', '--reason', 'refunded at the provider']);
  expect(resolved.code).toBe(0);
  expect(resolved.err.join('\n')).toMatch(/audit: ledger discrepancy of pay-k1, charge ch_1 resolved by .*: refunded at the provider/);
  expect((await run(['ledger'])).out).toEqual(['1 ledger discrepancy', expect.stringMatching(/^pay-k2 {2}ch_2/)]);
  expect(`${listed.text}${show.text}${orphan.text}`).not.toMatch(/SECRET|4242|EUR/);
});
