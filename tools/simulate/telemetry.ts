import type { Meter } from '@opentelemetry/api';
import type { Logger, LogRecord } from '@opentelemetry/api-logs';
import { Telemetry } from '../../src/telemetry/Telemetry';
import type { World } from './world';

/** A counter increment or a log line, as an operator would see it (metric, alert, log), at its virtual time. */
export interface Signal {
  readonly atMs: number;
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
}

/**
 * The app's telemetry kept in memory (no exporter): counters by name with their attributes, and log lines with their
 * level and fields. The invariants read it: "an alert names it" is a count of an alerting metric, and an error log
 * line with the payment's key.
 */
export class SimTelemetry {
  readonly counts: Signal[] = [];
  readonly logs: Array<Signal & { readonly level: string; readonly body: string }> = [];
  readonly telemetry: Telemetry;

  constructor(world: World) {
    const meter = {
      createCounter: (name: string) => ({
        add: (_value: number, attributes: Record<string, unknown> = {}) => this.counts.push({ atMs: world.nowMs(), name, attributes }),
      }),
      createHistogram: () => ({ record: () => undefined }),
    } as unknown as Meter;
    const logger = {
      emit: (record: LogRecord) => {
        const level = String(record.severityText ?? '');
        const body = typeof record.body === 'string' ? record.body : JSON.stringify(record.body ?? '');
        // The app's warnings and errors join the trace (what an operator would read next to the schedule's steps).
        if (level === 'WARN' || level === 'ERROR' || process.env.SIM_TRACE_INFO) world.log(`app ${level.toLowerCase()}: ${body.slice(0, 160)}`);
        this.logs.push({
          atMs: world.nowMs(),
          name: 'log',
          level,
          body,
          attributes: record.attributes ?? {},
        });
      },
    } as unknown as Logger;
    this.telemetry = new Telemetry(meter, logger);
  }

  /** Counts of `name`, optionally only those whose log line or attributes name `key`. */
  count(name: string): number {
    return this.counts.filter((c) => c.name === name).length;
  }

  /** Error log lines that name the payment's key. */
  errorsNaming(key: string): Array<{ atMs: number; body: string }> {
    return this.logs.filter((l) => l.level === 'ERROR' && l.attributes.idempotencyKey === key);
  }
}
