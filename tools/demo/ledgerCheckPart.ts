import type { TableClient } from '@azure/data-tables';
import { keyFromMessageId, type Clock, type IdempotencyStore } from 'azure-functions-idempotency';
import { runLedgerCheck } from '../../src/app/ledgerCheckTimer';
import { ledgerGraceMs, type LedgerDiscrepancy } from '../../src/payments/ledgerCheck';
import { ChargeListUnsupportedError, PaymentProviderClient, TransientProviderError } from '../../src/payments/PaymentProviderClient';
import { StoreUnavailableError } from 'azure-functions-idempotency';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import type { RetryBudget } from '../../src/payments/chargeOrchestration';
import { Telemetry } from '../../src/telemetry/Telemetry';

/** What the demo's ledger check found over the run (docs/demo.md "The ledger check"). */
export interface DemoLedgerReport {
  /** False when the provider offers no list (it answered 404/405/501): nothing was checked. */
  readonly offered: boolean;
  /** Charges given a verdict (matched, not charged, or a discrepancy). */
  readonly checked: number;
  readonly matched: number;
  readonly discrepancies: readonly LedgerDiscrepancy[];
  /** List requests (pages) over the run. */
  readonly pages: number;
  readonly ticks: number;
  /** Charges still undecided at the end (a record still in progress). */
  readonly undecided: number;
  /** Ticks that failed transiently (the provider's injected 5xx and timeouts on the list): the next tick resumed. */
  readonly failedTicks: number;
}

/** The demo's ledger check: ticks of the app's own check (`runLedgerCheck`) on the run's table and provider. */
export interface DemoLedgerCheck {
  /** Ticks until the window up to now is walked (a tick stops at its page bound); after a drain, before the jump and at the end. */
  catchUp(): Promise<void>;
  report(): DemoLedgerReport;
}

/**
 * The ledger check as the app runs it, over the whole run: from the moment the run starts, against the provider's list
 * (the demo's fake provider, or `PAYMENT_PROVIDER_URL`'s), the records of the run's payments table, its checkpoint and
 * discrepancy rows in the same table. `clock` is the provider's: the demo's jumping clock for its own provider, the
 * system clock for an external one (it knows nothing of the jump). Caught up before the time phase's jump (the sweep
 * then removes the records of the charges before it, older than the retention on the demo's clock) and at the end.
 */
export function demoLedgerCheck(options: {
  readonly providerUrl: string;
  readonly table: TableClient;
  readonly store: Pick<IdempotencyStore, 'get'>;
  readonly clock: Clock;
  readonly retry: RetryBudget;
  readonly retentionMs: number;
}): DemoLedgerCheck {
  const startMs = options.clock.nowMs() - 1;
  // The run's provider timeout scale: a list request hung by an injected timeout fails in 2 s and the next tick retries.
  const provider = new PaymentProviderClient({ baseUrl: options.providerUrl, timeoutMs: 2_000 });
  const totals = { checked: 0, matched: 0, pages: 0, ticks: 0, undecided: 0, failedTicks: 0 };
  const discrepancies: LedgerDiscrepancy[] = [];
  let offered = true;
  return {
    async catchUp() {
      if (!offered) return;
      for (let tick = 0; tick < 1_000; tick++) {
        let result;
        try {
          result = await runLedgerCheck({
            provider,
            table: options.table,
            record: (paymentId) => options.store.get(keyFromMessageId(PAYMENTS_CONSUMER, paymentId)),
            telemetry: new Telemetry(),
            clock: options.clock,
            delayMs: 0,
            retentionMs: options.retentionMs,
            graceMs: ledgerGraceMs(options.retry),
            maxPages: 50,
            budgetMs: 60_000,
            timeoutMs: 10_000,
            initialFromMs: startMs,
          });
        } catch (error) {
          if (error instanceof ChargeListUnsupportedError) {
            offered = false;
            return;
          }
          // As the timer: a failed tick saved what it did; the next one goes on from there.
          if ((error instanceof TransientProviderError || error instanceof StoreUnavailableError) && totals.failedTicks < 100) {
            totals.failedTicks++;
            continue;
          }
          throw error;
        }
        totals.ticks++;
        totals.pages += result.pages;
        totals.matched += result.matched;
        totals.checked += result.matched + result.notCharged + result.discrepancies.length;
        totals.undecided = result.checkpoint.pending.length;
        discrepancies.push(...result.discrepancies);
        if (result.stoppedBy === undefined || result.stoppedBy === 'pending-full') return;
      }
    },
    report: () => ({ offered, ...totals, discrepancies }),
  };
}

/**
 * The verdict's line of the ledger check: `ledger check: 0 discrepancies (1,234 charges matched, 25 list pages)`;
 * `ledger check: not run (the provider offers no list)` when it answered the list 404/405/501.
 */
export function ledgerVerdictLine(report: {
  readonly parts: ReadonlyArray<{ readonly name: string; readonly details: Readonly<Record<string, unknown>> }>;
}): string {
  const d = report.parts.find((p) => p.name === 'payments')?.details;
  if (!d || d.ledgerCheck === undefined) return 'ledger check: not run (no payments part)';
  if (d.ledgerCheck !== 'list') return 'ledger check: not run (the provider offers no list of its charges)';
  const n = (x: unknown) => Number(x ?? 0).toLocaleString('en-US');
  const count = Number(d.ledgerDiscrepancies ?? 0);
  const undecided = Number(d.ledgerUndecided ?? 0);
  return (
    `ledger check: ${n(count)} discrepanc${count === 1 ? 'y' : 'ies'} (${n(d.ledgerMatched)} charges matched to their records, ` +
    `${n(d.ledgerPages)} list pages in ${n(d.ledgerTicks)} ticks, ${n(d.ledgerFailedTicks)} failed and resumed` +
    `${undecided > 0 ? `, ${n(undecided)} still undecided` : ''})`
  );
}
