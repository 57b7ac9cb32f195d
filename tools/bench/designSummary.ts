import { percentile } from './stats';

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
}

/**
 * Storage requests grouped for reading: the claim's tables (`app.table`), Durable's queues by operation, its
 * tables by table (History, Instances, ...), its blobs by container and operation.
 * Keys are `account.service.resource.operation`; the group drops the resource for queues (control + work items
 * together, by operation) and the operation for tables.
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
  figures['idle storage transactions / s'] = total(run.storage.idle.requests) / run.storage.idle.seconds;
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
