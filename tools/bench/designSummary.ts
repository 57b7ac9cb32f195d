import { percentile, round } from './stats';
import { totalOf, type HostLogCount, type LogLevels } from '../cost/hostTelemetry';

/**
 * CPU ms per burst message of the split phase, by process (/proc), and the whole machine's. `counters`, `appAzurite`,
 * `engineAzurite`: runs whose counting proxies ran in a process of their own (before 2026-12-02 b: in the bench's).
 */
export interface CpuMsPerMessage {
  readonly benchProcess: number;
  readonly durableHost?: number;
  readonly counters?: number;
  readonly appAzurite?: number;
  readonly engineAzurite?: number;
  readonly machine?: number;
}

/** Pauses of 200 ms or more of each Node process's event loop in the split phase's paced part (s since it began, ms). */
export type ProcessStalls = Readonly<Record<string, ReadonlyArray<{ readonly atS: number; readonly ms: number }>>>;

/** The counts of one design's run that the summary and the cost script read (a subset of the bench's JSON). */
export interface DesignCounts {
  readonly design: string;
  readonly payments: number;
  readonly consumer: { readonly executionMsP50: number; readonly executionMsP99: number; readonly executions: number };
  readonly durable: { readonly executions: number };
  readonly statusPollsPerPayment: number;
  readonly paymentsPerSecond: number;
  readonly acksPerSecond: number;
  /** Payments sent one at a time after the workload: the trigger's execution times then. */
  readonly sparse?: { readonly consumerExecutionMs: readonly number[] };
  readonly storage: {
    readonly workload: { readonly requests: Readonly<Record<string, number>> };
    readonly idle: { readonly seconds: number; readonly requests: Readonly<Record<string, number>> };
  };
  readonly serviceBus: { readonly sends: number; readonly receives: number; readonly completes: number; readonly abandons: number; readonly renewals: number };
  readonly telemetry: { readonly logRecords: number; readonly logBytes: number };
  /** The Durable host's log records at host.json's levels during the workload (absent in runs before issue 37). */
  readonly hostTelemetry?: { readonly levels: LogLevels; readonly records: readonly HostLogCount[] };
  /** Handoff's split phase (`--split-payments`): the trigger alone, then one worker's drain. */
  readonly split?: {
    readonly payments: number;
    readonly paced: {
      readonly ratePerSecond: number;
      readonly executionMsP50: number;
      readonly executionMsP99: number;
      readonly warmupMs?: readonly number[];
      readonly eventLoopDelayMaxMs?: number;
      readonly slowRequests?: {
        readonly count: number;
        readonly slowest: ReadonlyArray<{ what: string; atS: number; ms: number }>;
        readonly duringWarmup?: number;
      };
      readonly stalls?: ProcessStalls;
    };
    readonly burst: {
      readonly executionMsP50: number;
      readonly executionMsP99: number;
      readonly acksPerSecond: number;
      readonly cpuMsPerMessage?: CpuMsPerMessage;
    };
    readonly triggerStoragePerMessage: Readonly<Record<string, number>>;
    readonly drain: { readonly paymentsPerSecond: number };
    readonly memoryPeakMb?: { readonly durableHost?: number; readonly benchProcess?: number };
    readonly charged: number;
  };
}

/**
 * Storage requests (`account.service.resource.operation`) grouped for reading: the claim's tables, Durable's queues by
 * operation, its tables by table, its blobs by container and operation.
 */
export function groupOf(key: string): string {
  const [account, service, resource, ...rest] = key.split('.');
  const operation = rest.join('.');
  if (account === 'app') return `claim tables (${service})`;
  if (service === 'queue') return `durable queue ${operation}`;
  if (service === 'table') return `durable table ${resource}`;
  return `durable blob ${resource} ${operation}`;
}

/** Sum of requests per group ({@link groupOf}), divided by `per`. */
export function groupedPer(requests: Readonly<Record<string, number>>, per: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(requests)) out[groupOf(key)] = (out[groupOf(key)] ?? 0) + n / per;
  return out;
}

/** Figures per payment (and idle figures per second) of one design's run, side by side ready. */
export function summarize(run: DesignCounts): Record<string, number> {
  const per = run.payments;
  const total = (requests: Readonly<Record<string, number>>) => Object.values(requests).reduce((a, b) => a + b, 0);
  const sb = run.serviceBus;
  const figures: Record<string, number> = {
    'consumer execution p50 ms': run.consumer.executionMsP50,
    'consumer execution p99 ms': run.consumer.executionMsP99,
    'consumer execution, payment alone, p50 ms': run.sparse?.consumerExecutionMs.length ? percentile([...run.sparse.consumerExecutionMs], 50) : Number.NaN,
    'status polls / payment': run.statusPollsPerPayment,
    'payments / s (one host, until every charge finished)': run.paymentsPerSecond,
    'messages acknowledged / s (the trigger alone)': run.acksPerSecond,
    'executions / payment': (run.consumer.executions + run.durable.executions) / per,
    'storage transactions / payment': total(run.storage.workload.requests) / per,
  };
  for (const [group, n] of Object.entries(groupedPer(run.storage.workload.requests, per)).sort()) figures[`  ${group} / payment`] = n;
  figures['Service Bus ops / payment (receive+complete+abandon+renew)'] = (sb.receives + sb.completes + sb.abandons + sb.renewals) / per;
  figures['  sends / payment'] = sb.sends / per;
  figures['  renewals / payment'] = sb.renewals / per;
  figures['app log records / payment'] = run.telemetry.logRecords / per;
  figures['app log bytes / payment'] = run.telemetry.logBytes / per;
  const host = run.hostTelemetry ? totalOf(run.hostTelemetry.records) : { records: Number.NaN, bytes: Number.NaN };
  figures['host log records / payment (host.json levels)'] = host.records / per;
  figures['host log bytes / payment (host.json levels)'] = host.bytes / per;
  figures['idle storage transactions / s'] = total(run.storage.idle.requests) / run.storage.idle.seconds;
  const split = run.split;
  if (split) {
    figures[`split: trigger alone, paced at ${split.paced.ratePerSecond}/s, p50 ms`] = split.paced.executionMsP50;
    figures[`split: trigger alone, paced at ${split.paced.ratePerSecond}/s, p99 ms`] = split.paced.executionMsP99;
    figures['split: trigger alone, burst, p50 ms'] = split.burst.executionMsP50;
    figures['split: trigger alone, burst, p99 ms'] = split.burst.executionMsP99;
    figures['split: messages acknowledged / s (trigger alone, burst)'] = split.burst.acksPerSecond;
    figures['split: trigger storage requests / message (claim + start)'] = total(split.triggerStoragePerMessage);
    const cpu = split.burst.cpuMsPerMessage;
    if (cpu) {
      const apart = cpu.counters !== undefined;
      figures[`split: CPU ms / message, bench process (trigger + bus${apart ? '' : ' + counting proxies'})`] = cpu.benchProcess;
      if (cpu.durableHost !== undefined) figures['split: CPU ms / message, Durable host (start API)'] = cpu.durableHost;
      if (cpu.counters !== undefined) figures['split: CPU ms / message, counting proxies'] = cpu.counters;
      if (cpu.appAzurite !== undefined && cpu.engineAzurite !== undefined)
        figures['split: CPU ms / message, Azurite (app + task hub)'] = cpu.appAzurite + cpu.engineAzurite;
      if (cpu.machine !== undefined) figures['split: CPU ms / message, whole machine'] = cpu.machine;
      const perCore = triggerPerCore(cpu);
      if (perCore !== undefined) figures['split: messages / s one core serves (1000 / (trigger + start API) CPU ms)'] = perCore;
    }
    figures['split: payments / s one Durable worker drains'] = split.drain.paymentsPerSecond;
    if (split.memoryPeakMb?.durableHost !== undefined)
      figures['split: peak memory MB, Durable worker host (dotnet + Node worker)'] = split.memoryPeakMb.durableHost;
    if (split.memoryPeakMb?.benchProcess !== undefined)
      figures['split: peak memory MB, bench process (trigger, bus, provider)'] = split.memoryPeakMb.benchProcess;
  }
  return figures;
}

/** Rows `figure | hold | handoff | handoff/hold` for the runs given (a missing design prints `-`). */
export function sideBySide(hold: DesignCounts | undefined, handoff: DesignCounts | undefined): string[][] {
  const a = hold ? summarize(hold) : {};
  const b = handoff ? summarize(handoff) : {};
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  const show = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '-' : String(Math.round(v * 100) / 100));
  return names.map((name) => {
    const x = a[name];
    const y = b[name];
    const ratio = x !== undefined && y !== undefined && x !== 0 && !Number.isNaN(x) && !Number.isNaN(y) ? show(y / x) : '-';
    return [name, show(x), show(y), ratio];
  });
}

/**
 * The split phase in words, with its ratio to the holding design's payments per second through one host (measured in
 * the same run) and to its ceiling (concurrency / provider seconds): the lines the bench prints under the table.
 */
export function splitLines(hold: DesignCounts | undefined, handoff: DesignCounts | undefined, concurrency: number, providerMs: number): string[] {
  const split = handoff?.split;
  if (!split) return [];
  const ceiling = concurrency / Math.max(0.001, providerMs / 1000);
  const lines = [
    `split (handoff, the Durable host as a client: the trigger alone): paced at ${split.paced.ratePerSecond}/s` +
      `${split.paced.warmupMs ? ` after ${split.paced.warmupMs.length} warm-up messages (max ${Math.max(...split.paced.warmupMs)} ms)` : ''}: p50 ${split.paced.executionMsP50} ms, p99 ${split.paced.executionMsP99} ms` +
      `${split.paced.eventLoopDelayMaxMs !== undefined ? ` (this process's longest event-loop delay ${split.paced.eventLoopDelayMaxMs} ms)` : ''}; ` +
      `at once: p50 ${split.burst.executionMsP50} ms, p99 ${split.burst.executionMsP99} ms, ${split.burst.acksPerSecond} acknowledged/s`,
    `split: trigger storage requests per message ${round(Object.values(split.triggerStoragePerMessage).reduce((a, b) => a + b, 0))} (${Object.entries(
      split.triggerStoragePerMessage,
    )
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
    ...(split.paced.slowRequests
      ? [
          `split: dependencies' answers of 200 ms or more while paced: ${split.paced.slowRequests.count}` +
            (split.paced.slowRequests.slowest.length > 0
              ? `; slowest ${split.paced.slowRequests.slowest
                  .slice(0, 5)
                  .map((r) => `${r.what} ${r.ms} ms at ${r.atS} s`)
                  .join(', ')}`
              : '') +
            (split.paced.slowRequests.duringWarmup !== undefined ? ` (${split.paced.slowRequests.duringWarmup} during the warm-up)` : ''),
        ]
      : []),
    ...(split.paced.stalls ? [stallsLine(split.paced.stalls)] : []),
    ...(split.burst.cpuMsPerMessage ? [cpuLine(split.burst.cpuMsPerMessage, ceiling)] : []),
    ...(split.memoryPeakMb
      ? [
          `split: peak memory (VmHWM): Durable worker host ${split.memoryPeakMb.durableHost ?? '-'} MB (dotnet + its Node worker), ` +
            `bench process ${split.memoryPeakMb.benchProcess ?? '-'} MB (trigger, bus, fake provider)`,
        ]
      : []),
    `split: one Durable worker then drained at ${split.drain.paymentsPerSecond} payments/s; charged ${split.charged} of ${split.payments}`,
    `split: trigger alone vs the holding design's ceiling (${round(ceiling)}/s = ${concurrency} calls / ${providerMs / 1000} s): ${round(split.burst.acksPerSecond / ceiling)}x`,
  ];
  if (hold)
    lines.push(
      `split: trigger alone vs hold measured in this run (${hold.paymentsPerSecond} payments/s): ${round(split.burst.acksPerSecond / hold.paymentsPerSecond)}x`,
    );
  // The hold cannot reach concurrency / provider time: each message is held for a whole payment, measured alone.
  const holdAloneMs = hold?.sparse?.consumerExecutionMs.length ? percentile([...hold.sparse.consumerExecutionMs], 50) : undefined;
  if (holdAloneMs !== undefined && holdAloneMs > 0) {
    const heldCeiling = concurrency / (holdAloneMs / 1000);
    const perCore = triggerPerCore(split.burst.cpuMsPerMessage);
    lines.push(
      `split: trigger alone vs the hold's ceiling at its own time per payment (${round(heldCeiling)}/s = ${concurrency} calls / ${round(holdAloneMs / 1000)} s, ` +
        `the p50 of a payment alone in this run): ${round(split.burst.acksPerSecond / heldCeiling)}x measured` +
        (perCore !== undefined ? `, ${round(perCore / heldCeiling)}x for one core (derived from CPU)` : ''),
    );
  }
  return lines;
}

/**
 * Messages a second one core would acknowledge if only the trigger and the Durable start API used it: derived from
 * CPU time, not measured; only when the counting proxies ran apart (else the bench process's figure includes them).
 */
export function triggerPerCore(cpu: CpuMsPerMessage | undefined): number | undefined {
  if (!cpu || cpu.counters === undefined || cpu.durableHost === undefined) return undefined;
  const ms = cpu.benchProcess + cpu.durableHost;
  return ms > 0 ? round(1000 / ms) : undefined;
}

function cpuLine(cpu: CpuMsPerMessage, ceiling: number): string {
  if (cpu.counters === undefined)
    return (
      `split: CPU ms per burst message: bench process ${cpu.benchProcess} (an upper bound of the trigger's: it also runs the bus and the counting proxies), ` +
      `Durable host ${cpu.durableHost ?? '-'}, whole machine ${cpu.machine ?? '-'}`
    );
  const perCore = triggerPerCore(cpu);
  return (
    `split: CPU ms per burst message: trigger + bus ${cpu.benchProcess}, Durable host (start API) ${cpu.durableHost ?? '-'}, counting proxies ${cpu.counters}, ` +
    `Azurite ${round((cpu.appAzurite ?? 0) + (cpu.engineAzurite ?? 0))}, whole machine ${cpu.machine ?? '-'}` +
    (perCore !== undefined
      ? `; one core for the trigger and the start API alone: ${perCore} messages/s (derived from CPU), ${round(perCore / ceiling)}x the hold's ceiling`
      : '')
  );
}

/** Which processes' event loops paused while paced, and when: a slow answer during a pause is that pause. */
function stallsLine(stalls: ProcessStalls): string {
  const paused = Object.entries(stalls).filter(([, list]) => list.length > 0);
  const watched = Object.keys(stalls).join(', ');
  if (paused.length === 0) return `split: event-loop pauses of 200 ms or more while paced: none (watched: ${watched})`;
  const shown = paused.map(
    ([name, list]) =>
      `${name} ${list
        .slice(0, 5)
        .map((x) => `${x.ms} ms at ${x.atS} s`)
        .join(', ')}${list.length > 5 ? ` (+${list.length - 5})` : ''}`,
  );
  return `split: event-loop pauses of 200 ms or more while paced: ${shown.join('; ')} (watched: ${watched})`;
}
