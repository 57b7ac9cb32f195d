import type { InvocationContext, Timer } from '@azure/functions';
import type { TableClient } from '@azure/data-tables';
import { ConfigurationError, keyFromMessageId, systemClock, type Clock, type IdempotencyRecord } from 'azure-functions-idempotency';
import type { Settings } from '../config/settings';
import { readLedgerCheckpoint, recordDiscrepancy, writeLedgerCheckpoint } from '../payments/ledgerRows';
import { retentionMsOf } from '../lifecycle/retention';
import { ledgerCheckTick, ledgerGraceMs, type LedgerTickReport } from '../payments/ledgerCheck';
import { ChargeListUnsupportedError, type PaymentProviderClient } from '../payments/PaymentProviderClient';
import { PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';
import { shardLayoutOf, shardOf } from '../payments/shards';
import { MetricNames, Telemetry } from '../telemetry/Telemetry';
import { invocationLogSink } from '../telemetry/invocationLogSink';
import { providerFromSettings, retryBudgetOf } from './payments';
import { consumerStoreFromSettings, storeFromSettings, tableClientsOf, type WiringOverrides } from './stores';

/** Where a first tick (no checkpoint yet) starts: this long before the window's end (then clipped to the retention). */
export const LEDGER_INITIAL_LOOKBACK_MS = 24 * 60 * 60_000;

/** What one ledger check tick runs on (the timer builds it from the settings; tests and the demo pass theirs). */
export interface LedgerCheckOn {
  readonly provider: Pick<PaymentProviderClient, 'listCharges'>;
  /** The idempotency table: the checkpoint row and the discrepancy rows (src/payments/ledgerRows.ts). */
  readonly table: TableClient;
  /** The payments record of a paymentId, on this shard's consumer store (point read). */
  readonly record: (paymentId: string) => Promise<IdempotencyRecord | undefined>;
  /** This shard checks the charges of this key (default: every key; keyless charges too). */
  readonly owns?: (paymentId: string | undefined) => boolean;
  readonly telemetry: Telemetry;
  readonly clock: Clock;
  readonly delayMs: number;
  readonly retentionMs: number;
  readonly graceMs: number;
  readonly maxPages: number;
  readonly budgetMs: number;
  /** Deadline of each table call. */
  readonly timeoutMs: number;
  /** Where a first tick starts (default: {@link LEDGER_INITIAL_LOOKBACK_MS} before the window's end). */
  readonly initialFromMs?: number;
}

/** A tick's report, and whether its checkpoint was saved (false: an overlapping tick moved it first). */
export type LedgerCheckResult = LedgerTickReport & { readonly saved: boolean };

/**
 * One ledger check tick (src/payments/ledgerCheck.ts): reads the checkpoint, re-checks the undecided charges, walks the
 * provider's list from the checkpoint to `now - delay` (bounded pages and time), records each discrepancy once (a row
 * the key console lists, an error log with the key and the charge id, `payments.ledger.discrepancies`), counts what it
 * matched (`payments.ledger.checked`), and saves the checkpoint conditionally (ETag).
 * @throws the list's or a record read's error after saving what was done (the next tick resumes); ChargeListUnsupportedError
 *   (the provider offers no list: `PAYMENT_PROVIDER_LEDGER=list` is wrong)
 */
export async function runLedgerCheck(on: LedgerCheckOn): Promise<LedgerCheckResult> {
  const { telemetry, clock } = on;
  const stored = await readLedgerCheckpoint(on.table, on.timeoutMs);
  const startMs = clock.nowMs();
  const checkpoint = stored.checkpoint ?? { fromMs: on.initialFromMs ?? startMs - on.delayMs - LEDGER_INITIAL_LOOKBACK_MS, pending: [] };
  const report = await ledgerCheckTick(checkpoint, {
    list: (window, cursor) => on.provider.listCharges(window, cursor, 100),
    record: on.record,
    owns: on.owns ?? (() => true),
    report: (discrepancy) => recordDiscrepancy(on.table, discrepancy, clock.nowMs(), on.timeoutMs),
    nowMs: () => clock.nowMs(),
    delayMs: on.delayMs,
    retentionMs: on.retentionMs,
    graceMs: on.graceMs,
    maxPages: on.maxPages,
    budgetMs: on.budgetMs,
  });
  for (const d of report.discrepancies) {
    telemetry.count(MetricNames.ledgerDiscrepancies, { consumer: PAYMENTS_CONSUMER, reason: d.reason });
    telemetry.log(
      'error',
      `payments ledger check: charge ${d.chargeId} under ${d.paymentId || '(no key)'} is not held by a succeeded record (${d.reason}: ${d.detail}): check the charge at the provider, then refund it or correct the record`,
      { consumer: PAYMENTS_CONSUMER, idempotencyKey: d.paymentId, chargeId: d.chargeId, reason: d.reason, outcome: 'ledger-discrepancy' },
    );
  }
  const checked = report.matched + report.notCharged + report.discrepancies.length + report.alreadyReported;
  telemetry.count(MetricNames.ledgerChecked, { consumer: PAYMENTS_CONSUMER, outcome: 'matched' }, report.matched);
  if (report.notCharged > 0) telemetry.count(MetricNames.ledgerChecked, { consumer: PAYMENTS_CONSUMER, outcome: 'not-charged' }, report.notCharged);
  if (report.clippedFromMs !== undefined)
    telemetry.log(
      'error',
      `payments ledger check: its checkpoint (${new Date(report.clippedFromMs).toISOString()}) was older than the records' retention: charges before ${new Date(startMs - on.retentionMs).toISOString()} were not checked`,
      { consumer: PAYMENTS_CONSUMER, outcome: 'ledger-gap' },
    );
  if (report.stoppedBy === 'pending-full')
    telemetry.log(
      'warn',
      `payments ledger check: ${report.checkpoint.pending.length} undecided charges (the most a checkpoint keeps): the window waits for them to settle`,
      { consumer: PAYMENTS_CONSUMER, outcome: 'ledger-pending-full' },
    );
  const saved = await writeLedgerCheckpoint(on.table, stored.etag, report.checkpoint, clock.nowMs(), on.timeoutMs);
  telemetry.log(
    saved ? 'info' : 'warn',
    `payments ledger check: ${checked} charge(s) checked (${report.matched} matched, ${report.notCharged} not charged, ${report.discrepancies.length} discrepanc${report.discrepancies.length === 1 ? 'y' : 'ies'}), ` +
      `${report.checkpoint.pending.length} undecided, ${report.otherShard} of other shards, ${report.pages} page(s)` +
      (report.stoppedBy ? ` (stopped: ${report.stoppedBy})` : '') +
      (saved ? '' : '; another tick moved the checkpoint first: this one is not saved (the next tick checks again)'),
    { consumer: PAYMENTS_CONSUMER, outcome: 'ledger-checked' },
  );
  if (report.error !== undefined) throw report.error instanceof Error ? report.error : new Error(`ledger check tick failed: ${JSON.stringify(report.error)}`);
  return { ...report, saved };
}

/** What the ledger check timer may take from elsewhere than the settings; tests pass their own. */
export interface LedgerCheckOverrides extends Pick<WiringOverrides, 'tableClient' | 'clock' | 'idempotencyContainer' | 'retentionMs'> {
  readonly telemetry?: Telemetry;
  readonly provider?: Pick<PaymentProviderClient, 'listCharges'>;
}

/** Why no ledger check runs with these settings (`PAYMENT_PROVIDER_LEDGER=none`), or undefined when one does. */
export function noLedgerCheckReason(settings: Pick<Settings, 'PAYMENT_PROVIDER_LEDGER'>): string | undefined {
  return settings.PAYMENT_PROVIDER_LEDGER === 'none'
    ? 'PAYMENT_PROVIDER_LEDGER=none: the provider offers no list of its charges by time (Adyen: reports only), so no independent check matches its charges to the records; only the guards stand'
    : undefined;
}

/**
 * The ledger check timer's handler from validated settings: with `PAYMENT_PROVIDER_LEDGER=list`, one tick
 * ({@link runLedgerCheck}) on this shard's store and idempotency table; with `none`, a tick that says it is skipped.
 * @throws ConfigurationError when the list is declared without `PAYMENT_PROVIDER_URL`, or when the grace
 *   (retry budget + record-write retries + margin) plus the list's delay is not inside the records' retention (an
 *   undecided charge's record could be swept before it is decided).
 */
export function ledgerCheckFromSettings(settings: Settings, overrides: LedgerCheckOverrides = {}): (timer: Timer, context: InvocationContext) => Promise<void> {
  const skipped = noLedgerCheckReason(settings);
  if (skipped) return async (_timer, context) => context.log(`payments ledger check: skipped (${skipped})`);
  const retentionMs = overrides.retentionMs ?? retentionMsOf(settings);
  const graceMs = ledgerGraceMs(retryBudgetOf(settings));
  const delayMs = settings.PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS * 1000;
  if (graceMs + delayMs >= retentionMs)
    throw new ConfigurationError(
      `the ledger check's grace (${Math.round(graceMs / 3_600_000)} h: PAYMENT_RETRY_BUDGET_MINUTES + 7 days of record-write retries + 1 h) plus PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS must be shorter than IDEMPOTENCY_RETENTION_DAYS`,
    );
  const telemetry = overrides.telemetry ?? new Telemetry();
  const provider = overrides.provider ?? providerFromSettings(settings, telemetry);
  const tableStore = storeFromSettings(settings, overrides);
  const store = consumerStoreFromSettings(settings, overrides, tableStore);
  const table = tableClientsOf(settings, overrides)(settings.IDEMPOTENCY_TABLE_NAME);
  const layout = shardLayoutOf(settings);
  const clock = overrides.clock ?? systemClock;
  return async (timer, context) => {
    if (timer.isPastDue) context.warn('ledger check timer is past due');
    try {
      await runLedgerCheck({
        provider,
        table,
        record: (paymentId) => store.get(keyFromMessageId(PAYMENTS_CONSUMER, paymentId)),
        // Sharded: each shard checks the charges of the keys it owns; keyless charges are shard 0's.
        owns: (paymentId) => (paymentId === undefined ? layout.index === 0 : shardOf(paymentId, layout.count) === layout.index),
        telemetry: telemetry.withSink(invocationLogSink(context)),
        clock,
        delayMs,
        retentionMs,
        graceMs,
        maxPages: settings.LEDGER_CHECK_PAGES_PER_TICK,
        budgetMs: settings.LEDGER_CHECK_BUDGET_SECONDS * 1000,
        timeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
      });
    } catch (error) {
      const why = error instanceof ChargeListUnsupportedError ? ' (set PAYMENT_PROVIDER_LEDGER=none for a provider without a list)' : '';
      context.error(`payments ledger check failed${why}: ${error instanceof Error ? `${error.name}: ${error.message}` : typeof error}`);
      throw error;
    }
  };
}
