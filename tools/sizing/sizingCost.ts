import { costPerMillion, type CostOptions, type RunCounts } from '../cost/costModel';
import { DEFAULT_PRICES } from '../cost/prices';
import type { SizingPlan } from './sizingPlan';

/** A month of seconds (30 days), as `npm run cost` counts it. */
const SECONDS_PER_MONTH = 30 * 86_400;

/** `npm run cost`'s defaults (tools/cost/main.ts): list prices, 2 GB instances, one always-ready instance per shard, Azure's 10 s idle polling. */
export const DEFAULT_COST_OPTIONS: CostOptions = {
  prices: DEFAULT_PRICES,
  memoryGb: 2,
  alwaysReadyInstances: 1,
  azureMaxQueuePollingMs: 10_000,
  telemetryItemOverheadBytes: 0,
  hostTelemetryBytesPerExecution: 0,
  secondsPerMonth: SECONDS_PER_MONTH,
  eventHubsThroughputUnits: 1,
};

/** What a sized deployment costs: its fixed month, a million payments, and a month at the target rate all month. */
export interface SizingCost {
  readonly fixedPerMonth: number;
  readonly perMillion: number;
  /** Fixed month + the target rate sustained for 30 days (an upper bound: traffic is never flat at its peak). */
  readonly monthAtTarget: number;
}

/**
 * The cost of `plan` from the run's counts, by `npm run cost`'s model (tools/cost/costModel.ts) with the plan's shards
 * and Service Bus tier: the same figures as `npm run cost -- --from FILE --shards N --service-bus-units U`. Idle polling
 * is the run's (4 partitions) per shard: a 16-partition hub polls 12 more queues when idle, not priced.
 */
export function sizingCostOf(run: RunCounts, plan: SizingPlan, options: CostOptions = DEFAULT_COST_OPTIONS): SizingCost {
  const estimate = costPerMillion(run, {
    ...options,
    shards: plan.shards,
    serviceBusPremiumUnits: plan.serviceBus.tier === 'Premium' ? plan.serviceBus.units : undefined,
  });
  const fixed = estimate.totals.fixedPerMonth;
  const perMillion = estimate.totals.variableBusy;
  return { fixedPerMonth: fixed, perMillion, monthAtTarget: fixed + (perMillion * plan.target * options.secondsPerMonth) / 1_000_000 };
}
