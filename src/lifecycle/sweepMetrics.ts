import type { Meter } from '@opentelemetry/api';
import type { SweepReport } from './ExpirySweeper';

/** Counter names of the expiry sweep. */
export const SWEEP_METRICS = {
  scanned: 'idempotency.purge.scanned',
  deleted: 'idempotency.purge.deleted',
  skipped: 'idempotency.purge.skipped',
} as const;

/**
 * Adds one run's counts to the purge counters of `meter` (use `metrics.getMeter('idempotent-consumer')`).
 * `skipped` carries a `reason` attribute: `leased`, `changed` or `alreadyDeleted`.
 */
export function recordSweepMetrics(meter: Meter, report: SweepReport): void {
  meter.createCounter(SWEEP_METRICS.scanned, { description: 'expired idempotency records the sweep read', unit: '{record}' }).add(report.scanned);
  meter.createCounter(SWEEP_METRICS.deleted, { description: 'expired idempotency records the sweep deleted', unit: '{record}' }).add(report.deleted);
  const skipped = meter.createCounter(SWEEP_METRICS.skipped, { description: 'expired idempotency records the sweep left', unit: '{record}' });
  skipped.add(report.skippedLeased, { reason: 'leased' });
  skipped.add(report.skippedChanged, { reason: 'changed' });
  skipped.add(report.alreadyDeleted, { reason: 'alreadyDeleted' });
}
