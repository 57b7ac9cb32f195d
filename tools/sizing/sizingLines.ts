import type { RunCounts } from '../cost/costModel';
import { bindingHubLimit, bindingLimit, limitsOf, type Deployment } from './hubLimits';
import type { PaymentLoad } from './paymentLoad';
import { kindLabel } from './publishedLimits';
import { sizingCostOf } from './sizingCost';
import { sizingPlanFor, UTILIZATION, type SizingPlan } from './sizingPlan';

/** The targets of docs/performance.md's sizing table, payments a second. */
export const SIZING_TARGETS = [500, 2_000, 10_000] as const;

const r = (n: number) => (Number.isFinite(n) ? String(Math.round(n * 100) / 100) : 'unbounded');
const usd = (n: number) => `$${Math.round(n).toLocaleString('en-US')}`;

/**
 * The lines `npm run bench:durable` (and `npm run sizing`) print for one design: the counted load, every limit of one
 * hub deployed as `deployment` with its formula, figure and source (published, RECALLED or ASSUMPTION), the binding one.
 */
export function limitLines(load: PaymentLoad, deployment: Deployment): string[] {
  const limits = limitsOf(load, deployment);
  const hub = bindingHubLimit(limits);
  const all = bindingLimit(limits, 1);
  const sources = new Map<string, string>();
  for (const l of limits) for (const f of l.figures) sources.set(f.source, kindLabel(f.kind));
  return [
    `${load.design}: per payment ${r(load.accountRequests)} requests on the shard's account without idle polls (${r(load.accountRequestsWithIdle)} with them), ` +
      `${r(load.workItemMessages)} work-item and ${r(load.controlMessages)} control-queue messages, ${r(load.orchestrationEpisodes)} orchestration episodes, ` +
      `${r(load.entityBatches)} entity batches, ${r(load.activities)} activities, ${r(load.serviceBusCredits)} Service Bus credits`,
    `${load.design}: limits of one hub in ${deployment.region}, ${deployment.partitions} partitions, Service Bus ${deployment.serviceBusUnits === 0 ? 'Standard' : `Premium ${deployment.serviceBusUnits} unit(s)`}:`,
    ...limits.map(
      (l) =>
        `  ${l.scope === 'hub' ? 'per hub ' : 'all hubs'} ${l.name}: ${r(l.paymentsPerSecond)} payments/s = ${l.formula} [${l.figures.map((f) => kindLabel(f.kind)).join(', ')}]`,
    ),
    `${load.design}: binding for one hub: ${hub.name} (${r(hub.paymentsPerSecond)} payments/s); for the deployment: ${all.limit.name} (${r(all.paymentsPerSecond)} payments/s)`,
    '  sources:',
    ...[...sources].map(([source, kind]) => `    [${kind}] ${source}`),
  ];
}

/** One row of the sizing table with its cost (`run`: the same design's counts, for `npm run cost`'s model). */
export function sizingRow(load: PaymentLoad, run: RunCounts, target: number, region: string): { plan: SizingPlan; line: string } {
  const plan = sizingPlanFor(load, target, region);
  const cost = sizingCostOf(run, plan);
  const sb = plan.serviceBus.tier === 'Standard' ? 'Standard' : `Premium ${plan.serviceBus.units} unit(s)`;
  const line =
    `| ${target.toLocaleString('en-US')} | ${plan.shards} | ${plan.partitions} | ${plan.accounts} | ${sb} | ${plan.instances.total} (${plan.instances.perApp} an app, ${plan.instances.cores} cores) ` +
    `| ${plan.binding.name} (${r(plan.binding.paymentsPerSecond)}/s a hub) | ${usd(cost.fixedPerMonth)} | ${usd(cost.perMillion)} | ${usd(cost.monthAtTarget)} | ${plan.problems.join('; ') || '-'} |`;
  return { plan, line };
}

/** The sizing table (markdown) for `targets`, with each row's cost. */
export function sizingTableLines(load: PaymentLoad, run: RunCounts, region: string, targets: readonly number[] = SIZING_TARGETS): string[] {
  return [
    `${load.design}: sizing in ${region}, every limit at most ${UTILIZATION * 100} % used (cost: npm run cost's model, list prices):`,
    '| payments/s | shards | partitions | storage accounts | Service Bus | Flex instances at the rate | binding per hub | fixed a month | a million payments | a month at the rate |  problems |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...targets.map((t) => sizingRow(load, run, t, region).line),
  ];
}
