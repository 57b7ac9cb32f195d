import type { LogLevel, Telemetry } from '../telemetry/Telemetry';
import { MetricNames } from '../telemetry/Telemetry';
import { messageIdText, type MessageInfo } from './messageInfo';

/** What a consumer did with one delivery; every consumer reports through {@link reportOutcome}. */
export const Outcome = {
  /** Processed now (first claim). */
  Processed: 'processed',
  /** Claimed now and the work handed to a durable orchestration that finishes it (payments, handoff design). */
  HandedOff: 'handedOff',
  /** Processed now after taking over a lapsed or released claim. */
  ProcessedAfterTakeover: 'reclaimed',
  /** Seen and completed before: acknowledged without effects. */
  Duplicate: 'duplicate',
  /** Another delivery of the key is being processed right now. */
  InProgress: 'inProgress',
  /** The key was used before for another payload: parked, alerted. */
  KeyReused: 'keyReused',
  /** Malformed: parked with a reason. */
  Parked: 'parked',
  /** A newer version of a naturally idempotent update was applied (no dedup record involved). */
  Applied: 'applied',
  /** A stale or repeated version of a naturally idempotent update: ignored. */
  StaleVersion: 'staleVersion',
  /** A transient failure: left to the broker to redeliver. */
  Retry: 'retry',
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

export interface OutcomeReport {
  readonly consumer: string;
  readonly outcome: Outcome;
  readonly info: MessageInfo;
  readonly idempotencyKey?: string;
  readonly digest?: string;
  /** Why (park reason, duplicate source, error class); never payload data. */
  readonly reason?: string;
  readonly attempt?: number;
  readonly detail?: string;
}

const LEVEL: Record<Outcome, LogLevel> = {
  processed: 'info',
  handedOff: 'info',
  reclaimed: 'warn',
  duplicate: 'info',
  inProgress: 'warn',
  keyReused: 'error',
  parked: 'error',
  applied: 'info',
  staleVersion: 'info',
  retry: 'warn',
};

/** Outcomes that went through a claim: each counts once in `idempotency.claims` (the duplicate rate's denominator). */
const CLAIMED: ReadonlySet<Outcome> = new Set<Outcome>([
  Outcome.Processed,
  Outcome.HandedOff,
  Outcome.ProcessedAfterTakeover,
  Outcome.Duplicate,
  Outcome.InProgress,
  Outcome.KeyReused,
]);

/**
 * Counts the outcome in its metrics and writes one structured log line for it. `idempotency.claims`
 * counts every delivery that reached a claim, whatever it answered, so that duplicates / claims
 * is the duplicate rate (infra/monitoring/queries/duplicate-rate.kql).
 */
export function reportOutcome(telemetry: Telemetry, report: OutcomeReport): void {
  const { consumer, outcome } = report;
  if (CLAIMED.has(outcome)) telemetry.count(MetricNames.claims, { consumer });
  switch (outcome) {
    case Outcome.Processed:
    case Outcome.HandedOff:
      break;
    case Outcome.ProcessedAfterTakeover:
      telemetry.count(MetricNames.takeovers, { consumer });
      break;
    case Outcome.Duplicate:
      telemetry.count(MetricNames.duplicates, { consumer, reason: report.reason ?? 'completed' });
      break;
    case Outcome.InProgress:
      telemetry.count(MetricNames.inProgress, { consumer });
      break;
    case Outcome.KeyReused:
      telemetry.count(MetricNames.keyReuse, { consumer });
      telemetry.count(MetricNames.parked, { consumer, reason: 'key-reused' });
      break;
    case Outcome.Parked:
      telemetry.count(MetricNames.parked, { consumer, reason: report.reason ?? 'unknown' });
      break;
    case Outcome.Applied:
      break;
    case Outcome.StaleVersion:
      telemetry.count(MetricNames.staleVersions, { consumer, reason: report.reason ?? 'stale' });
      break;
    case Outcome.Retry:
      break;
  }
  telemetry.log(LEVEL[outcome], `${consumer}: ${outcome}${report.reason ? ` (${report.reason})` : ''}${report.detail ? `: ${report.detail}` : ''}`, {
    consumer,
    outcome,
    idempotencyKey: report.idempotencyKey,
    messageId: messageIdText(report.info),
    correlationId: report.info.correlationId,
    deliveryCount: report.info.deliveryCount,
    digest: report.digest,
    reason: report.reason,
    attempt: report.attempt,
  });
}

/**
 * A key reuse found downstream (a provider refused our key with another body after our record had
 * expired): the same alert as one we detect ourselves (`idempotency.key_reuse`), with an error log
 * line. The delivery itself was processed (and reported as such).
 */
export function reportDownstreamKeyReuse(telemetry: Telemetry, report: { consumer: string; idempotencyKey: string; digest: string; message: string }): void {
  telemetry.count(MetricNames.keyReuse, { consumer: report.consumer });
  telemetry.log('error', `${report.consumer}: ${report.message}`, {
    consumer: report.consumer,
    idempotencyKey: report.idempotencyKey,
    digest: report.digest,
    outcome: 'providerKeyReused',
    reason: 'provider-key-reused',
  });
}
