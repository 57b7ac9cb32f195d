import { metrics, type Attributes, type Counter, type Histogram, type Meter } from '@opentelemetry/api';
import { logs, SeverityNumber, type Logger } from '@opentelemetry/api-logs';

/** Metric names as they appear in Application Insights `customMetrics` (see infra/monitoring). */
export const MetricNames = {
  claims: 'idempotency.claims',
  duplicates: 'idempotency.duplicates',
  keyReuse: 'idempotency.key_reuse',
  inProgress: 'idempotency.in_progress',
  takeovers: 'idempotency.takeovers',
  purgeScanned: 'idempotency.purge.scanned',
  purgeDeleted: 'idempotency.purge.deleted',
  purgeSkipped: 'idempotency.purge.skipped',
  purgeHeldExtended: 'idempotency.purge.held_extended',
  parked: 'messages.parked',
  /** Stream batches that threw (the trigger retries them; the partition does not move): by consumer, partitionId, kind. */
  batchFailures: 'messages.batch_failures',
  /**
   * Stream batches stopped by a table the consumer cannot use (401/403, 404 TableNotFound, 409 TableBeingDeleted): by
   * consumer, partitionId, table, status, code. Never a strike, never parked: alerted (`stream-misconfigured`).
   */
  storeMisconfigured: 'messages.store_misconfigured',
  staleVersions: 'messages.stale_versions',
  providerLatency: 'payments.provider.latency',
  /**
   * Provider answers that are not its word about the key (401, 403, 404, 405, 429, a 400/422 without its error body:
   * a layer before its idempotency answered): retried, never a result; by statusCode (a 401 wave pages at once).
   */
  providerRefused: 'payments.provider.refused',
  /**
   * A call's `succeeded` answer that met the record settled otherwise (`failed`, `declined`, `rejected`, another charge
   * or a later generation): the customer is charged and the record says not. Sev 1: logged with the key and charge id.
   */
  chargedAfterSettle: 'payments.charged_after_settle',
  /** Payments whose transient provider failures outlasted the retry budget (handoff design): ended `failed`, alerted. */
  paymentsFailed: 'payments.failed',
  /** Payments held for an operator: a call that may have charged could be checked neither by key memory nor by look-up. */
  paymentsHeld: 'payments.held',
  /** The provider answered a look-up 400/404/405/501: `PAYMENT_PROVIDER_LOOKUP` declares one it does not offer. */
  providerLookupUnsupported: 'payments.provider.lookup_unsupported',
  /** A delivery waited inside its invocation for the store to answer again (src/messaging/storeOutage.ts). */
  storeOutageWaits: 'messages.store_outage.waits',
  /** In-progress payments whose run ended (failed, terminated, missing) without the record: restarted by the reconciler, alerted. */
  paymentsReconciled: 'payments.reconciled',
  /** In-progress payments whose run is still Running, Pending or Suspended past RUN_STUCK_AFTER_MS: alerted, not taken over. */
  paymentsRunStuck: 'payments.run_stuck',
  /** Reconciler passes the budget stopped before they read every in-progress record (the next tick resumes). */
  reconcilerIncomplete: 'payments.reconciler.incomplete',
  /** The run's record write refused by the store (403, 404, 400: a role, a deleted table, a bug): retried, alerted. */
  recordWriteRefused: 'payments.record_write_refused',
  /**
   * Each reconciler pass: the age in minutes (from its claim) of the oldest payments record it found still in
   * progress past its lease and grace, 0 for none (a histogram: one value a pass; the alert reads its maximum).
   */
  oldestInProgressMinutes: 'payments.in_progress.oldest_minutes',
  /**
   * Deliveries refused because this shard's table holds a live payment record another shard owns (PAYMENT_SHARD_COUNT
   * changed without `npm run payments:reshard`): by consumer, shard, owner. Alerted (`payments-shard-layout`).
   */
  shardLayoutRefused: 'payments.shard_layout_refused',
  /**
   * Charges the provider made that no record holds as `succeeded` with that charge (src/payments/ledgerCheck.ts): no
   * record, a record completed otherwise, or undecided past the grace; by kind. Sev-1 alert (`payments-ledger-discrepancy`).
   */
  ledgerDiscrepancies: 'payments.ledger.discrepancies',
  /** Charges each ledger check tick matched to their record (by outcome: matched, not-charged, other-shard, deferred). */
  ledgerChecked: 'payments.ledger.checked',
} as const;
/** The metrics recorded as histograms (a value each time); every other name is a counter. */
export type HistogramName = typeof MetricNames.providerLatency | typeof MetricNames.oldestInProgressMinutes;
export type CounterName = Exclude<(typeof MetricNames)[keyof typeof MetricNames], HistogramName>;

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * Fields of a structured log line. Never a payload: the key and the payload's digest stand in for it.
 * Values become `customDimensions` in Application Insights.
 */
export interface LogFields {
  consumer?: string;
  idempotencyKey?: string;
  messageId?: string;
  correlationId?: string;
  deliveryCount?: number;
  outcome?: string;
  digest?: string;
  reason?: string;
  attempt?: number;
  [name: string]: string | number | boolean | undefined;
}

/** Where log lines also go (e.g. the Functions InvocationContext, or a test's array). */
export type LogSink = (level: LogLevel, message: string, fields: LogFields) => void;

const SEVERITY: Record<LogLevel, SeverityNumber> = {
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
};

/**
 * Metrics and structured logs through the OpenTelemetry API. With no provider registered (tests,
 * the demo, CI) the API is a no-op; in Azure `applicationinsights` registers the global providers
 * (see `startTelemetry`), and tests register in-memory exporters.
 */
export class Telemetry {
  private readonly counters = new Map<string, Counter>();
  private readonly histograms = new Map<string, Histogram>();
  private readonly latency: Histogram;

  constructor(
    private readonly meter: Meter = metrics.getMeter('idempotent-consumer'),
    private readonly logger: Logger = logs.getLogger('idempotent-consumer'),
    private readonly sink?: LogSink,
  ) {
    this.latency = meter.createHistogram(MetricNames.providerLatency, { unit: 'ms', description: 'payment provider call latency' });
  }

  /** The same telemetry with log lines also sent to `sink` (e.g. one invocation's context). */
  withSink(sink: LogSink): Telemetry {
    return new Telemetry(this.meter, this.logger, sink);
  }

  count(name: CounterName, attributes: Attributes = {}, value = 1): void {
    let counter = this.counters.get(name);
    if (!counter) {
      counter = this.meter.createCounter(name);
      this.counters.set(name, counter);
    }
    counter.add(value, attributes);
  }

  providerLatency(ms: number, attributes: Attributes = {}): void {
    this.latency.record(ms, attributes);
  }

  /** One value of a histogram other than the provider's latency (its own method, with its unit). */
  record(name: Exclude<HistogramName, typeof MetricNames.providerLatency>, value: number, attributes: Attributes = {}): void {
    let histogram = this.histograms.get(name);
    if (!histogram) {
      histogram = this.meter.createHistogram(name);
      this.histograms.set(name, histogram);
    }
    histogram.record(value, attributes);
  }

  log(level: LogLevel, message: string, fields: LogFields = {}): void {
    const attributes: Attributes = {};
    for (const [name, value] of Object.entries(fields)) if (value !== undefined) attributes[name] = value;
    this.logger.emit({ severityNumber: SEVERITY[level], severityText: level.toUpperCase(), body: message, attributes });
    this.sink?.(level, message, fields);
  }
}
