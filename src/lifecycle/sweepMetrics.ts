import type { Meter } from '@opentelemetry/api';
import { MetricNames } from '../telemetry/Telemetry';
import type { SweepReport } from 'azure-functions-idempotency/table';

/**
 * Adds one run's counts to the purge counters of `meter` (use `metrics.getMeter('idempotent-consumer')`).
 * `skipped` carries a `reason` attribute: `leased`, `held`, `changed` or `alreadyDeleted`; `held` counts the
 * held records (messages not resolved yet) whose retention a run moved forward.
 */
export function recordSweepMetrics(meter: Meter, report: SweepReport): void {
  meter.createCounter(MetricNames.purgeScanned, { description: 'expired idempotency records the sweep read', unit: '{record}' }).add(report.scanned);
  meter.createCounter(MetricNames.purgeDeleted, { description: 'expired idempotency records the sweep deleted', unit: '{record}' }).add(report.deleted);
  const skipped = meter.createCounter(MetricNames.purgeSkipped, { description: 'expired idempotency records the sweep left', unit: '{record}' });
  skipped.add(report.skippedLeased, { reason: 'leased' });
  skipped.add(report.skippedHeld, { reason: 'held' });
  meter
    .createCounter(MetricNames.purgeHeldExtended, { description: 'held idempotency records whose retention a sweep moved forward', unit: '{record}' })
    .add(report.heldExtended);
  skipped.add(report.skippedChanged, { reason: 'changed' });
  skipped.add(report.alreadyDeleted, { reason: 'alreadyDeleted' });
}
