/**
 * What one ledger check tick costs, counted on the wire (docs/performance.md "Ledger check: cost"): 500 charges at
 * the fake provider, each held by its completed record on Azurite; one tick reads them all. Table requests counted by
 * the bench's RoundTripCounter on the one TableClient the store and the check's rows share (after the SDK's retry
 * policy: a retry is a request, as billed); provider requests by the fake provider's own counter. The figures are
 * invariants of the code (one point read per charge, one checkpoint read and one write per tick, one list request per
 * 100 charges), asserted exactly; the tick's time on this machine is printed, never asserted.
 */
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { runLedgerCheck } from '../../src/app/ledgerCheckTimer';
import { PaymentProviderClient } from '../../src/payments/PaymentProviderClient';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { RoundTripCounter } from '../../tools/bench/RoundTripCounter';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

const azuriteOf = useAzurite();
const CHARGES = 500;

test('one tick over 500 charges: 500 point reads + a checkpoint read and write on the table, 5 list requests at the provider', async () => {
  let nowMs = Date.UTC(2026, 11, 1);
  const provider = await FakePaymentProvider.start({ clock: () => nowMs });
  try {
    const client = await freshTable(azuriteOf(), 'ledger');
    const clock = { nowMs: () => nowMs };
    const store = new TableIdempotencyStore(client, { leaseMs: 60_000, retentionMs: 30 * 86_400_000, clock, partitionCount: 16 });
    const payments = new PaymentProviderClient({ baseUrl: provider.url, timeoutMs: 10_000 });
    const startMs = nowMs;
    // Charges and their records, as a correct run leaves them (written here directly: the tick is what is measured).
    for (let i = 0; i < CHARGES; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const id = `pay-c${i + j}`;
          const charged = await payments.charge({ paymentId: id, customerId: 'c', amount: 100, currency: 'EUR' }, id);
          const claimed = await store.claim(keyFromMessageId(PAYMENTS_CONSUMER, id), 'digest');
          if (claimed.kind !== 'claimed') throw new Error(`not claimed: ${claimed.kind}`);
          await store.complete(claimed.claim, charged);
        }),
      );
      nowMs += 1_000;
    }
    nowMs += 60_000;
    const counter = RoundTripCounter.attach(client);
    const listsBefore = provider.listRequests;
    const began = performance.now();
    const tableRequests = await counter.measure(async () => {
      const result = await runLedgerCheck({
        provider: payments,
        table: client,
        record: (paymentId) => store.get(keyFromMessageId(PAYMENTS_CONSUMER, paymentId)),
        telemetry: new Telemetry(),
        clock,
        delayMs: 0,
        retentionMs: 30 * 86_400_000,
        graceMs: 8 * 86_400_000,
        maxPages: 50,
        budgetMs: 600_000,
        timeoutMs: 10_000,
        initialFromMs: startMs,
      });
      expect(result).toMatchObject({ matched: CHARGES, discrepancies: [], saved: true });
      expect(result.checkpoint.pending).toEqual([]);
    });
    const tickMs = performance.now() - began;
    const listRequests = provider.listRequests - listsBefore;
    expect(tableRequests).toBe(CHARGES + 2);
    expect(listRequests).toBe(CHARGES / 100);
    console.log(
      `ledger check tick on Azurite: ${CHARGES} charges, ${tableRequests} table requests (${CHARGES} point reads + checkpoint read + write), ` +
        `${listRequests} list requests, ${Math.round(tickMs)} ms (${(tickMs / CHARGES).toFixed(2)} ms a charge, 16 reads in flight)`,
    );
  } finally {
    await provider.stop();
  }
}, 300_000);
