import { accountRequestsPerSecond, durableOrchestrationsPerSecond, LIMITS, type Figure } from './publishedLimits';
import type { PaymentLoad } from './paymentLoad';

/**
 * Every limit on payments a second, from one payment's counted load ({@link PaymentLoad}) and the published figures
 * (./publishedLimits.ts): per task hub (its storage account, its work-item and control queues, Durable's orchestration
 * throughput, one Flex app's instances) and across all hubs (the one Service Bus namespace, the subscription's regional
 * Flex quota). The smallest binds.
 */

/** One limit: the payments a second it allows, how that was computed and from which figures. */
export interface Limit {
  readonly name: string;
  /** Payments a second (per hub for `scope: 'hub'`, all hubs together for `scope: 'all'`). */
  readonly paymentsPerSecond: number;
  readonly scope: 'hub' | 'all';
  readonly formula: string;
  readonly figures: readonly Figure[];
}

/** Where the hubs run and how: what the limits depend on besides a payment's load. */
export interface Deployment {
  /** Azure region (its storage accounts' request rate). */
  readonly region: string;
  /** Control-queue partitions of each hub (1-16). */
  readonly partitions: number;
  /** Premium messaging units (0: Standard). */
  readonly serviceBusUnits: number;
  /** Cores of one Flex instance (2048 MB: 1). */
  readonly coresPerInstance: number;
}

/** Work items a second one core processes: the benchmark's figure per EP2 worker over its 2 cores (an assumption: linear in cores). */
export const WORK_ITEMS_PER_CORE = LIMITS.durableWorkItemsPerSecondPerEp2Worker.value / 2;

/**
 * Payments a second one Flex instance carries: its Durable work (work items at {@link WORK_ITEMS_PER_CORE} a core)
 * plus the trigger's CPU (counted here) when the run measured it.
 */
export function paymentsPerInstance(load: PaymentLoad, coresPerInstance: number): number {
  const secondsPerPayment = load.workItems / (WORK_ITEMS_PER_CORE * coresPerInstance) + (load.triggerCpuMs ?? 0) / 1000 / coresPerInstance;
  return 1 / secondsPerPayment;
}

const r = (n: number) => (Number.isFinite(n) ? String(Math.round(n * 100) / 100) : 'unbounded');
const per = (limit: number, n: number) => (n > 0 ? limit / n : Number.POSITIVE_INFINITY);

/** Every limit for `load` deployed as `deployment`: the per-hub ones first, then those all hubs share. */
export function limitsOf(load: PaymentLoad, deployment: Deployment): Limit[] {
  const account = accountRequestsPerSecond(deployment.region);
  const queue = LIMITS.queueMessagesPerSecond;
  const durable = durableOrchestrationsPerSecond(deployment.partitions);
  const P = deployment.partitions;
  const instance = paymentsPerInstance(load, deployment.coresPerInstance);
  const requests = load.accountRequests + load.edgeRequests;
  const limits: Limit[] = [
    {
      name: 'storage account',
      scope: 'hub',
      paymentsPerSecond: per(account.value, requests),
      formula: `${account.value} req/s / (${r(load.accountRequests)} the hub's and the consumer's, idle polls left out (${r(load.accountRequestsWithIdle)} with them) + ${load.edgeRequests} webhook and API records, spread by key)`,
      figures: [account],
    },
    {
      name: 'work-item queue',
      scope: 'hub',
      paymentsPerSecond: per(queue.value, load.workItemMessages),
      formula: `${queue.value} msg/s / ${r(load.workItemMessages)} work-item messages`,
      figures: [queue],
    },
    {
      name: 'control queues',
      scope: 'hub',
      paymentsPerSecond: per(P * queue.value, load.controlMessages),
      formula: `${P} partitions x ${queue.value} msg/s / ${r(load.controlMessages)} control-queue messages`,
      figures: [queue],
    },
    {
      name: 'Durable orchestrations (Azure Storage provider)',
      scope: 'hub',
      paymentsPerSecond: durable.value,
      formula: `${durable.value} orchestrations/s at ${P} partitions, 1 orchestration a payment (${r(load.orchestrationEpisodes)} episodes, ${r(load.entityBatches)} entity batches, ${r(load.activities)} activities)`,
      figures: [durable],
    },
    {
      name: 'Flex instances of one app',
      scope: 'hub',
      paymentsPerSecond: LIMITS.appMaximumInstanceCount.value * instance,
      formula:
        `${LIMITS.appMaximumInstanceCount.value} instances as deployed (Flex allows ${LIMITS.flexMaxInstancesPerApp.value}) x ${r(instance)} payments/s an instance (${deployment.coresPerInstance} core: ${r(load.workItems)} work items at ${WORK_ITEMS_PER_CORE}/s a core` +
        `${load.triggerCpuMs === undefined ? '' : ` + trigger ${r(load.triggerCpuMs)} CPU ms counted here`})`,
      figures: [LIMITS.appMaximumInstanceCount, LIMITS.flexMaxInstancesPerApp, LIMITS.durableWorkItemsPerSecondPerEp2Worker],
    },
  ];
  const units = deployment.serviceBusUnits;
  const premium = LIMITS.serviceBusPremiumOperationsPerSecondPerUnit;
  limits.push(
    units === 0
      ? {
          name: "Service Bus Standard namespace (every shard's queue)",
          scope: 'all',
          paymentsPerSecond: per(LIMITS.serviceBusStandardCreditsPerSecond.value, load.serviceBusCredits),
          formula: `${LIMITS.serviceBusStandardCreditsPerSecond.value} credits/s / ${r(load.serviceBusCredits)} credits (send, receive, complete)`,
          figures: [LIMITS.serviceBusStandardCreditsPerSecond],
        }
      : {
          name: `Service Bus Premium namespace, ${units} unit(s)`,
          scope: 'all',
          paymentsPerSecond: per(units * premium.value, load.serviceBusCredits),
          formula: `${units} x ${premium.value} ops/s / ${r(load.serviceBusCredits)} operations`,
          figures: [premium],
        },
    {
      name: 'Flex regional quota (subscription)',
      scope: 'all',
      paymentsPerSecond: (LIMITS.flexRegionalQuotaCores.value / deployment.coresPerInstance) * instance,
      formula: `${LIMITS.flexRegionalQuotaCores.value} cores / ${deployment.coresPerInstance} a instance x ${r(instance)} payments/s an instance`,
      figures: [LIMITS.flexRegionalQuotaCores, LIMITS.durableWorkItemsPerSecondPerEp2Worker],
    },
  );
  return limits;
}

/** The limit that binds one hub: the smallest per-hub ceiling. */
export function bindingHubLimit(limits: readonly Limit[]): Limit {
  return limits.filter((l) => l.scope === 'hub').reduce((a, b) => (b.paymentsPerSecond < a.paymentsPerSecond ? b : a));
}

/** The limit that binds `shards` hubs together: N x the hub's binding one, or a limit they share. */
export function bindingLimit(limits: readonly Limit[], shards: number): { readonly limit: Limit; readonly paymentsPerSecond: number } {
  const hub = bindingHubLimit(limits);
  let best = { limit: hub, paymentsPerSecond: shards * hub.paymentsPerSecond };
  for (const l of limits) if (l.scope === 'all' && l.paymentsPerSecond < best.paymentsPerSecond) best = { limit: l, paymentsPerSecond: l.paymentsPerSecond };
  return best;
}
