import { groupOf } from '../bench/designSummary';
import { hostRecordsPriced, type HostLogCount, type LogLevels } from './hostTelemetry';
import type { Prices } from './prices';

type Billing = 'transaction' | 'class1' | 'class2' | 'write' | 'read' | 'other';

/** What the cost model reads from one design's run (`npm run bench:durable -- --out FILE`, `runs.<design>`). */
export interface RunCounts {
  readonly design: string;
  readonly payments: number;
  /** The Durable pollers' `maxQueuePollingInterval` in the run (the bench scales it to 500 ms). */
  readonly maxQueuePollingIntervalMs: number;
  /** The trigger's executions (`paymentsConsumer`, on demand): durations, and the measured active time of one instance. */
  readonly consumer: { readonly executions: number; readonly activeInstanceMs: number; readonly durationsMs: readonly number[] };
  /** Orchestrator, entity and activity executions (the `durable` group, on the always-ready instance). */
  readonly durable: { readonly executions: number; readonly activeInstanceMs: number; readonly durationsMs: readonly number[] };
  /** Payments sent one at a time: the billed active time of one payment alone, trigger and durable group (measured). */
  readonly sparse: { readonly payments: number; readonly consumerActiveMsPerPayment: number; readonly durableActiveMsPerPayment: number };
  readonly storage: {
    readonly workload: { readonly requests: Readonly<Record<string, number>>; readonly billing: Readonly<Record<string, string>> };
    readonly idle: { readonly seconds: number; readonly requests: Readonly<Record<string, number>>; readonly billing: Readonly<Record<string, string>> };
  };
  readonly serviceBus: { readonly sends: number; readonly receives: number; readonly completes: number; readonly abandons: number; readonly renewals: number };
  readonly telemetry: { readonly logRecords: number; readonly logBytes: number };
  /** The Durable host's log records at host.json's levels during the workload (runs since issue 37; absent before). */
  readonly hostTelemetry?: { readonly levels: LogLevels; readonly records: readonly HostLogCount[] };
}

export interface CostOptions {
  readonly prices: Prices;
  /** Flex instance memory (infra `instanceMemoryMB` 2048 = 2 GB). */
  readonly memoryGb: number;
  /** Always-ready instances of the `durable` group (infra `durableAlwaysReadyInstances` 1). */
  readonly alwaysReadyInstances: number;
  /** host.json's `maxQueuePollingInterval` in Azure (10 s): idle polling is scaled from the run's interval to it. */
  readonly azureMaxQueuePollingMs: number;
  /** Bytes Application Insights adds per log item (envelope, tags): not measured here; 0 unless given. */
  readonly telemetryItemOverheadBytes: number;
  /** Bytes per execution added to the host's telemetry on top of what the run measured (0 unless given). */
  readonly hostTelemetryBytesPerExecution: number;
  /** A month of seconds for the fixed lines (30 days = 2,592,000). */
  readonly secondsPerMonth: number;
  /**
   * Durable queue class-1 operations a payment (a put and a delete per message) to price instead of the run's:
   * issue 37's target is 12 (6 messages) against 18 today. The run's queue puts, deletes and gets are scaled by
   * target / counted; its tables and executions stay as run. Undefined: as counted.
   */
  readonly durableQueueOpsPerPayment?: number;
  /** host.json levels to price the host's records at (none below the run's: see {@link hostRecordsPriced}); undefined: as run. */
  readonly hostLogLevels?: LogLevels;
  /** Event Hubs Standard throughput units (infra: 1). */
  readonly eventHubsThroughputUnits: number;
  /**
   * Payment shards (infra `shardCount`, docs/deploy.md section 11): each has its own app, with its always-ready
   * instance(s), and its own task hub, polled when idle. Undefined: 1. The variable lines do not change: a payment's
   * requests, messages and executions are the same on whichever shard owns it.
   */
  readonly shards?: number;
  /** Service Bus Premium messaging units (infra `serviceBusSku` Premium): in place of Standard's base charge and per-operation price. Undefined: Standard. */
  readonly serviceBusPremiumUnits?: number;
}

/** One line of the bill: a count per payment, per million payments, its unit price and its dollars per million payments. */
export interface CostLine {
  readonly name: string;
  readonly perPayment: number;
  readonly perMillion: number;
  readonly unit: string;
  /** Dollars per unit (for a group of storage kinds: the average over the group). */
  readonly unitPrice: number;
  readonly usdPerMillion: number;
}

export interface CostEstimate {
  readonly design: string;
  /** Compute at the workload's overlap (a busy instance) for `busy`; as measured for payments one at a time for `sparse` (absent when the run sent none). */
  readonly variable: { readonly busy: readonly CostLine[]; readonly sparse?: readonly CostLine[] };
  /** Per month whatever the traffic (`unit` says per what; `perMillion` is the month's count). */
  readonly fixedPerMonth: readonly CostLine[];
  readonly totals: { readonly variableBusy: number; readonly variableSparse?: number; readonly fixedPerMonth: number };
  /** The Durable queue class-1 operations a payment priced: as counted, or `durableQueueOpsPerPayment`. */
  readonly durableQueueOpsPerPayment: number;
  /** What the estimate could not count in this run (e.g. the host's telemetry in runs before issue 37). */
  readonly unmeasured: readonly string[];
}

const MILLION = 1_000_000;

function priceOf(prices: Prices, billing: string): number {
  const table: Record<Billing, number> = {
    transaction: prices.tableTransaction,
    class1: prices.queueClass1,
    class2: prices.queueClass2,
    write: prices.blobWrite,
    read: prices.blobRead,
    other: prices.blobOther,
  };
  const price = table[billing as Billing];
  if (price === undefined) throw new Error(`unknown storage billing class '${billing}'`);
  return price;
}

/** A bill line: `perPayment` units at `unitPrice`, also per million payments. */
export function line(name: string, perPayment: number, unit: string, unitPrice: number): CostLine {
  return { name, perPayment, perMillion: perPayment * MILLION, unit, unitPrice, usdPerMillion: perPayment * MILLION * unitPrice };
}

const DURABLE_QUEUE_MESSAGE_OP = /^durable\.queue\.[^.]+\.(put|delete|get)$/;

/** The Durable queue class-1 operations (puts and deletes: one each per message) a payment, as counted. */
export function durableQueueOpsPerPayment(run: RunCounts): number {
  const requests = run.storage.workload.requests;
  const ops = Object.entries(requests).filter(([key]) => /^durable\.queue\.[^.]+\.(put|delete)$/.test(key));
  return ops.reduce((a, [, n]) => a + n, 0) / run.payments;
}

/**
 * The run's storage requests with the Durable queues' messages scaled to `opsPerPayment` class-1 operations a payment
 * (puts, deletes and the gets that take the messages, by target / counted); the rest as counted.
 */
function scaledRequests(run: RunCounts, opsPerPayment: number | undefined): Readonly<Record<string, number>> {
  const requests = run.storage.workload.requests;
  if (opsPerPayment === undefined) return requests;
  const counted = durableQueueOpsPerPayment(run);
  if (!(counted > 0)) throw new Error(`run '${run.design}' counted no Durable queue puts or deletes to scale`);
  const factor = opsPerPayment / counted;
  return Object.fromEntries(Object.entries(requests).map(([key, n]) => [key, DURABLE_QUEUE_MESSAGE_OP.test(key) ? n * factor : n]));
}

/** Storage lines per group of kinds ({@link groupOf}), each kind priced by its billing class. */
function storageLines(requests: Readonly<Record<string, number>>, billing: Readonly<Record<string, string>>, per: number, prices: Prices): CostLine[] {
  const groups = new Map<string, { count: number; usd: number }>();
  for (const [key, count] of Object.entries(requests)) {
    const group = groups.get(groupOf(key)) ?? { count: 0, usd: 0 };
    group.count += count;
    group.usd += count * priceOf(prices, billing[key]);
    groups.set(groupOf(key), group);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, g]) => line(`storage: ${name}`, g.count / per, 'transaction', g.count === 0 ? 0 : g.usd / g.count));
}

/**
 * Dollars per million payments from the counts of one run, by line, with list prices as parameters.
 * Compute (GB-s) is given two ways, because Flex bills an instance's active time once however many executions
 * overlap, with a 1 s minimum: `busy` = the active time measured under the workload (executions overlapping as
 * they did on one instance), `sparse` = the active time measured for payments sent one at a time (traffic so thin
 * that payments never overlap). A real month lies between.
 * @throws Error when the run has no payments or a storage kind has an unknown billing class.
 */
export function costPerMillion(run: RunCounts, options: CostOptions): CostEstimate {
  const per = run.payments;
  if (!(per > 0)) throw new Error(`run '${run.design}' has no payments`);
  const { prices, memoryGb } = options;
  const storage = storageLines(scaledRequests(run, options.durableQueueOpsPerPayment), run.storage.workload.billing, per, prices);
  const sb = run.serviceBus;
  const host = run.hostTelemetry
    ? hostRecordsPriced(run.hostTelemetry.records, run.hostTelemetry.levels, options.hostLogLevels, run.durable.executions, run.consumer.executions)
    : undefined;
  const appItems = run.telemetry.logRecords;
  const premium = options.serviceBusPremiumUnits;
  const common = [
    ...storage,
    line(
      `Service Bus operations (send, receive, complete, abandon, renew)${premium === undefined ? '' : ': Premium bills none'}`,
      (sb.sends + sb.receives + sb.completes + sb.abandons + sb.renewals) / per,
      'operation',
      premium === undefined ? prices.serviceBusOperation : 0,
    ),
    line('Flex executions on demand (trigger)', run.consumer.executions / per, 'execution', prices.flexExecution),
    line('Flex executions always ready (orchestrator, entity, activity)', run.durable.executions / per, 'execution', prices.flexExecution),
    line(
      "Application Insights: the app's own log records (measured) + per-item overhead (parameter)",
      (run.telemetry.logBytes + appItems * options.telemetryItemOverheadBytes) / per / 1e9,
      'GB',
      prices.appInsightsGb,
    ),
    ...(host
      ? [
          line(
            "Application Insights: the Durable host's records at host.json levels (measured) + per-item overhead",
            (host.durable.bytes + host.durable.records * options.telemetryItemOverheadBytes) / per / 1e9,
            'GB',
            prices.appInsightsGb,
          ),
          line(
            "Application Insights: the trigger's host records (Function.<name>, Host.Results: per execution as measured on the Durable ones)",
            (host.trigger.bytes + host.trigger.records * options.telemetryItemOverheadBytes) / per / 1e9,
            'GB',
            prices.appInsightsGb,
          ),
        ]
      : []),
    ...(options.hostTelemetryBytesPerExecution > 0
      ? [
          line(
            'Application Insights: host telemetry per execution (parameter)',
            ((run.consumer.executions + run.durable.executions) * options.hostTelemetryBytesPerExecution) / per / 1e9,
            'GB',
            prices.appInsightsGb,
          ),
        ]
      : []),
  ];
  const gbSeconds = (ms: number) => (ms / 1000) * memoryGb;
  const busy = [
    ...common,
    line(
      'Flex on-demand GB-s: paymentsConsumer (instance active time as run)',
      gbSeconds(run.consumer.activeInstanceMs) / per,
      'GB-s',
      prices.flexOnDemandGbSecond,
    ),
    line(
      'Flex always-ready execution GB-s: durable group (as run)',
      gbSeconds(run.durable.activeInstanceMs) / per,
      'GB-s',
      prices.flexAlwaysReadyExecutionGbSecond,
    ),
  ];
  const sparse =
    run.sparse.payments > 0
      ? [
          ...common,
          line(
            'Flex on-demand GB-s: paymentsConsumer (one payment at a time, measured)',
            gbSeconds(run.sparse.consumerActiveMsPerPayment),
            'GB-s',
            prices.flexOnDemandGbSecond,
          ),
          line(
            'Flex always-ready execution GB-s: durable group (one payment at a time, measured)',
            gbSeconds(run.sparse.durableActiveMsPerPayment),
            'GB-s',
            prices.flexAlwaysReadyExecutionGbSecond,
          ),
        ]
      : undefined;
  const idleScale = run.maxQueuePollingIntervalMs / options.azureMaxQueuePollingMs;
  const idlePerSecond = Object.entries(run.storage.idle.requests).reduce(
    (usd, [key, count]) => ({ count: usd.count + count, usd: usd.usd + count * priceOf(prices, run.storage.idle.billing[key]) }),
    { count: 0, usd: 0 },
  );
  const shards = options.shards ?? 1;
  if (!(Number.isInteger(shards) && shards >= 1)) throw new RangeError(`shards must be an integer >= 1 (got ${shards})`);
  const perShard = shards === 1 ? '' : `, ${shards} shards`;
  const idleTransactionsPerMonth = (idlePerSecond.count / run.storage.idle.seconds) * idleScale * options.secondsPerMonth * shards;
  const hours = options.secondsPerMonth / 3600;
  /** A line of the month whatever the traffic: `count` units a month at `unitPrice`. */
  const monthly = (name: string, count: number, unit: string, unitPrice: number): CostLine => ({
    name,
    perPayment: 0,
    perMillion: count,
    unit,
    unitPrice,
    usdPerMillion: count * unitPrice,
  });
  const baselineGbSeconds = shards * options.alwaysReadyInstances * memoryGb * options.secondsPerMonth;
  const fixed: CostLine[] = [
    monthly(
      `Durable idle polling (measured per second, scaled by maxQueuePollingInterval ${run.maxQueuePollingIntervalMs} ms -> ${options.azureMaxQueuePollingMs} ms${perShard})`,
      idleTransactionsPerMonth,
      'transaction',
      idlePerSecond.count === 0 ? 0 : idlePerSecond.usd / idlePerSecond.count,
    ),
    monthly(
      `Flex always-ready baseline (${options.alwaysReadyInstances} instance(s) x ${memoryGb} GB${perShard === '' ? '' : ` x ${shards} shards`}, all month)`,
      baselineGbSeconds,
      'GB-s',
      prices.flexAlwaysReadyBaselineGbSecond,
    ),
    premium === undefined
      ? monthly('Service Bus Standard base charge (the namespace, all month)', hours, 'hour', prices.serviceBusBaseHour)
      : monthly(`Service Bus Premium (${premium} messaging unit(s), the namespace, all month)`, premium * hours, 'MU-hour', prices.serviceBusPremiumUnitHour),
    monthly(
      `Event Hubs Standard throughput units (${options.eventHubsThroughputUnits} TU, all month; the rewards stream)`,
      options.eventHubsThroughputUnits * hours,
      'TU-hour',
      prices.eventHubsThroughputUnitHour,
    ),
  ];
  const sum = (lines: readonly CostLine[]) => lines.reduce((a, l) => a + l.usdPerMillion, 0);
  return {
    design: run.design,
    variable: { busy, sparse },
    fixedPerMonth: fixed,
    totals: { variableBusy: sum(busy), variableSparse: sparse ? sum(sparse) : undefined, fixedPerMonth: sum(fixed) },
    durableQueueOpsPerPayment: options.durableQueueOpsPerPayment ?? durableQueueOpsPerPayment(run),
    unmeasured: host ? [] : ["the Durable host's log records (this run predates their count: rerun npm run bench:durable)"],
  };
}
