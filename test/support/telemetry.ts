import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { Telemetry } from '../../src/telemetry/Telemetry';

/**
 * Telemetry wired to in-memory OpenTelemetry exporters (never Application Insights):
 * `counter(name, attrs)` sums a counter's points matching the attributes; `logs()` lists records.
 */
export function inMemoryTelemetry() {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const logExporter = new InMemoryLogRecordExporter();
  const loggerProvider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: logExporter })] });
  const telemetry = new Telemetry(meterProvider.getMeter('test'), loggerProvider.getLogger('test'));

  async function counter(name: string, attributes: Record<string, string> = {}): Promise<number> {
    const { resourceMetrics } = await reader.collect();
    let sum = 0;
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== name) continue;
        for (const point of metric.dataPoints as Array<{ value: unknown; attributes: Record<string, unknown> }>) {
          if (Object.entries(attributes).every(([k, v]) => point.attributes[k] === v)) sum += Number(point.value);
        }
      }
    return sum;
  }

  /** Number of values recorded in a histogram. */
  async function histogramCount(name: string): Promise<number> {
    const { resourceMetrics } = await reader.collect();
    let count = 0;
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== name) continue;
        for (const point of metric.dataPoints as Array<{ value: { count?: number } }>) count += point.value.count ?? 0;
      }
    return count;
  }

  /** The largest value recorded in a histogram (undefined when none). */
  async function histogramMax(name: string): Promise<number | undefined> {
    const { resourceMetrics } = await reader.collect();
    let max: number | undefined;
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== name) continue;
        for (const point of metric.dataPoints as Array<{ value: { max?: number } }>)
          if (point.value.max !== undefined) max = Math.max(max ?? point.value.max, point.value.max);
      }
    return max;
  }

  /** Attribute names seen per metric name, over every point exported so far. */
  async function metricAttributeNames(): Promise<Map<string, Set<string>>> {
    const { resourceMetrics } = await reader.collect();
    const names = new Map<string, Set<string>>();
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics) {
        const set = names.get(metric.descriptor.name) ?? new Set<string>();
        for (const point of metric.dataPoints as Array<{ attributes: Record<string, unknown> }>) for (const k of Object.keys(point.attributes)) set.add(k);
        names.set(metric.descriptor.name, set);
      }
    return names;
  }

  function logs() {
    return logExporter.getFinishedLogRecords().map((r) => ({ body: r.body, severity: r.severityText, attributes: r.attributes }));
  }

  async function shutdown(): Promise<void> {
    await meterProvider.shutdown();
    await loggerProvider.shutdown();
  }

  return { telemetry, meter: meterProvider.getMeter('test'), counter, histogramCount, histogramMax, metricAttributeNames, logs, shutdown };
}
