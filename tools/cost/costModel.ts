import { groupOf } from '../bench/designSummary';
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
  /** The Functions host's own telemetry per execution (request row, traces): not measured here; 0 unless given. */
  readonly hostTelemetryBytesPerExecution: number;
  /** A month of seconds for the fixed lines (30 days = 2,592,000). */
  readonly secondsPerMonth: number;
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

function line(name: string, perPayment: number, unit: string, unitPrice: number): CostLine {
  return { name, perPayment, perMillion: perPayment * MILLION, unit, unitPrice, usdPerMillion: perPayment * MILLION * unitPrice };
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
  const storage = storageLines(run.storage.workload.requests, run.storage.workload.billing, per, prices);
  const sb = run.serviceBus;
  const common = [
    ...storage,
    line(
      'Service Bus operations (send, receive, complete, abandon, renew)',
      (sb.sends + sb.receives + sb.completes + sb.abandons + sb.renewals) / per,
      'operation',
      prices.serviceBusOperation,
    ),
    line(
      'Flex executions (trigger + orchestrator, entity, activity)',
      (run.consumer.executions + run.durable.executions) / per,
      'execution',
      prices.flexExecution,
    ),
    line(
      'Application Insights: app log records (measured) + per-item overhead + host telemetry per execution (parameters)',
      (run.telemetry.logBytes +
        run.telemetry.logRecords * options.telemetryItemOverheadBytes +
        (run.consumer.executions + run.durable.executions) * options.hostTelemetryBytesPerExecution) /
        per /
        1e9,
      'GB',
      prices.appInsightsGb,
    ),
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
  const idleTransactionsPerMonth = (idlePerSecond.count / run.storage.idle.seconds) * idleScale * options.secondsPerMonth;
  const fixed: CostLine[] = [
    {
      name: `Durable idle polling (measured per second, scaled by maxQueuePollingInterval ${run.maxQueuePollingIntervalMs} ms -> ${options.azureMaxQueuePollingMs} ms)`,
      perPayment: 0,
      perMillion: idleTransactionsPerMonth,
      unit: 'transaction',
      unitPrice: idlePerSecond.count === 0 ? 0 : idlePerSecond.usd / idlePerSecond.count,
      usdPerMillion: idlePerSecond.count === 0 ? 0 : idleTransactionsPerMonth * (idlePerSecond.usd / idlePerSecond.count),
    },
    {
      name: `Flex always-ready baseline (${options.alwaysReadyInstances} instance(s) x ${memoryGb} GB, all month)`,
      perPayment: 0,
      perMillion: options.alwaysReadyInstances * memoryGb * options.secondsPerMonth,
      unit: 'GB-s',
      unitPrice: prices.flexAlwaysReadyBaselineGbSecond,
      usdPerMillion: options.alwaysReadyInstances * memoryGb * options.secondsPerMonth * prices.flexAlwaysReadyBaselineGbSecond,
    },
  ];
  const sum = (lines: readonly CostLine[]) => lines.reduce((a, l) => a + l.usdPerMillion, 0);
  return {
    design: run.design,
    variable: { busy, sparse },
    fixedPerMonth: fixed,
    totals: { variableBusy: sum(busy), variableSparse: sparse ? sum(sparse) : undefined, fixedPerMonth: sum(fixed) },
  };
}

/** The bill's terms: its lines summed by what they pay for. */
export interface CostTerms {
  readonly compute: number;
  readonly storage: number;
  readonly serviceBus: number;
  readonly executions: number;
  readonly applicationInsights: number;
}

/** Sums lines into terms (compute = the GB-s lines; storage = every `storage:` line) and names the largest. */
export function termsOf(lines: readonly CostLine[]): { terms: CostTerms; largest: keyof CostTerms } {
  const terms = { compute: 0, storage: 0, serviceBus: 0, executions: 0, applicationInsights: 0 };
  for (const l of lines) {
    if (l.unit === 'GB-s') terms.compute += l.usdPerMillion;
    else if (l.name.startsWith('storage:')) terms.storage += l.usdPerMillion;
    else if (l.unit === 'operation') terms.serviceBus += l.usdPerMillion;
    else if (l.unit === 'execution') terms.executions += l.usdPerMillion;
    else if (l.unit === 'GB') terms.applicationInsights += l.usdPerMillion;
    else throw new Error(`cost line '${l.name}' (${l.unit}) belongs to no term`);
  }
  const largest = (Object.keys(terms) as Array<keyof CostTerms>).reduce((a, b) => (terms[b] > terms[a] ? b : a));
  return { terms, largest };
}
