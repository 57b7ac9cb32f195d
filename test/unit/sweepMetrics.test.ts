import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { SweepReport } from 'azure-functions-idempotency/table';
import { recordSweepMetrics } from '../../src/lifecycle/sweepMetrics';

/** Collects on demand (no export interval): what a dashboard or an alert on the purge counters would read. */
class CollectingReader extends MetricReader {
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** A report whose counts are all different, so that a count written to the wrong counter or reason shows. */
const report = {
  held: 40,
  heldWithRecord: 30,
  heldExtended: 7,
  skippedHeld: 5,
  scanned: 101,
  deleted: 61,
  deletedLocalRows: 9,
  skipped: 40,
  skippedLeased: 11,
  skippedChanged: 13,
  alreadyDeleted: 17,
  requests: 12,
  partitionsCompleted: 3,
  stoppedByBudget: false,
  checkpointSaved: true,
  cutoffMs: 1_000,
  durationMs: 250,
} as unknown as SweepReport;

async function exported(reports: SweepReport[]) {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ readers: [reader] });
  for (const r of reports) recordSweepMetrics(provider.getMeter('idempotent-consumer'), r);
  const { resourceMetrics } = await reader.collect();
  await provider.shutdown();
  const metrics = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  return Object.fromEntries(
    metrics.map((m) => [
      m.descriptor.name,
      {
        description: m.descriptor.description,
        unit: m.descriptor.unit,
        points: (m.dataPoints as Array<{ value: unknown; attributes: Record<string, unknown> }>).map((p) => ({ value: p.value, attributes: p.attributes })),
      },
    ]),
  );
}

describe('recordSweepMetrics: the purge counters an operator reads after each expiry sweep', () => {
  test('each count goes to its counter, with its description and unit; the skipped ones under their reason', async () => {
    const metrics = await exported([report]);
    expect(Object.keys(metrics).sort()).toEqual([
      'idempotency.purge.deleted',
      'idempotency.purge.held_extended',
      'idempotency.purge.scanned',
      'idempotency.purge.skipped',
    ]);
    expect(metrics['idempotency.purge.scanned']).toEqual({
      description: 'expired idempotency records the sweep read',
      unit: '{record}',
      points: [{ value: 101, attributes: {} }],
    });
    expect(metrics['idempotency.purge.deleted']).toEqual({
      description: 'expired idempotency records the sweep deleted',
      unit: '{record}',
      points: [{ value: 61, attributes: {} }],
    });
    expect(metrics['idempotency.purge.held_extended']).toEqual({
      description: 'held idempotency records whose retention a sweep moved forward',
      unit: '{record}',
      points: [{ value: 7, attributes: {} }],
    });
    const skipped = metrics['idempotency.purge.skipped'];
    expect({ description: skipped.description, unit: skipped.unit }).toEqual({ description: 'expired idempotency records the sweep left', unit: '{record}' });
    expect(skipped.points.map((p) => [p.attributes, p.value]).sort((a, b) => Number(a[1]) - Number(b[1]))).toEqual([
      [{ reason: 'held' }, 5],
      [{ reason: 'leased' }, 11],
      [{ reason: 'changed' }, 13],
      [{ reason: 'alreadyDeleted' }, 17],
    ]);
  });

  test('runs add up: two sweeps on the same meter sum per counter and reason', async () => {
    const metrics = await exported([report, { ...report, scanned: 1, skippedLeased: 2 }]);
    expect(metrics['idempotency.purge.scanned'].points).toEqual([{ value: 102, attributes: {} }]);
    expect(metrics['idempotency.purge.skipped'].points.find((p) => p.attributes.reason === 'leased')?.value).toBe(13);
    expect(metrics['idempotency.purge.held_extended'].points).toEqual([{ value: 14, attributes: {} }]);
  });
});
