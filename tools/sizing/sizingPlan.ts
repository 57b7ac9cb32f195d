import { bindingHubLimit, limitsOf, paymentsPerInstance, type Deployment, type Limit } from './hubLimits';
import type { PaymentLoad } from './paymentLoad';
import { LIMITS } from './publishedLimits';

/**
 * A deployment sized for a target rate from every limit (./hubLimits.ts): the partitions and shards (one storage
 * account each), the Service Bus tier and units, and the Flex instances, each limit run at most at {@link UTILIZATION}.
 */

/** The share of a limit the plan uses: headroom for uneven keys (the router's max/mean is about 1.02 over 10,000 ids) and bursts. */
export const UTILIZATION = 0.8;
/** The most shards the app and the template take (PAYMENT_SHARD_COUNT, infra shardCount). */
export const MAX_SHARDS = 64;
/** Premium messaging units a namespace takes: up to 16 with 1 messaging partition, 32 and 64 with 4 (infra serviceBus.bicep). */
export const PREMIUM_UNITS = [1, 2, 4, 8, 16, 32, 64] as const;

/** The deployment for one target rate. */
export interface SizingPlan {
  readonly target: number;
  readonly region: string;
  readonly partitions: number;
  readonly shards: number;
  /** Storage accounts: one per shard (its task hub and tables; the HTTP records spread over them by key). */
  readonly accounts: number;
  readonly serviceBus: { readonly tier: 'Standard' | 'Premium'; readonly units: number };
  /** Flex instances at the target (all shards), per app, and their cores against the regional quota. */
  readonly instances: { readonly total: number; readonly perApp: number; readonly cores: number; readonly quotaCores: number };
  /** The hub limit that set the shard count. */
  readonly binding: Limit;
  /** What the plan cannot meet with its deployment (a shard count past 64, units past 16, cores past the quota). */
  readonly problems: readonly string[];
  /** Every limit at the plan's partitions and units. */
  readonly limits: readonly Limit[];
}

/** Shards for `target` at `partitions`: ceil(target / (UTILIZATION x the hub's binding ceiling)). */
function shardsAt(load: PaymentLoad, target: number, region: string, partitions: number, coresPerInstance: number): { shards: number; binding: Limit } {
  const binding = bindingHubLimit(limitsOf(load, { region, partitions, serviceBusUnits: 0, coresPerInstance }));
  return { shards: Math.max(1, Math.ceil(target / (UTILIZATION * binding.paymentsPerSecond))), binding };
}

/**
 * The deployment `target` payments a second need in `region`: 4 or 16 partitions (whichever needs fewer shards; 4 on a
 * tie: fewer queues polled when idle), the shards, Standard while its credits suffice else Premium with the fewest units
 * that do, and the instances.
 */
export function sizingPlanFor(load: PaymentLoad, target: number, region: string, coresPerInstance = 1): SizingPlan {
  const at4 = shardsAt(load, target, region, 4, coresPerInstance);
  const at16 = shardsAt(load, target, region, 16, coresPerInstance);
  const [partitions, { shards, binding }] = at16.shards < at4.shards ? [16, at16] : [4, at4];
  const problems: string[] = [];
  if (shards > MAX_SHARDS) problems.push(`${shards} shards: more than the ${MAX_SHARDS} the app and the template take`);
  const credits = target * load.serviceBusCredits;
  const standardOk = credits <= UTILIZATION * LIMITS.serviceBusStandardCreditsPerSecond.value;
  const perUnit = UTILIZATION * LIMITS.serviceBusPremiumOperationsPerSecondPerUnit.value;
  const units = standardOk ? 0 : (PREMIUM_UNITS.find((u) => u * perUnit >= credits) ?? 0);
  if (!standardOk && units === 0)
    problems.push(
      `${Math.round(credits)} Service Bus operations/s: more than 64 Premium units carry (${64 * perUnit} at the assumed rate): a second namespace`,
    );
  const instance = paymentsPerInstance(load, coresPerInstance);
  const total = Math.ceil(target / (UTILIZATION * instance));
  const perApp = Math.ceil(total / Math.min(shards, MAX_SHARDS));
  if (perApp > LIMITS.appMaximumInstanceCount.value)
    problems.push(
      `${perApp} instances an app: more than the deployed maximumInstanceCount ${LIMITS.appMaximumInstanceCount.value} (Flex allows ${LIMITS.flexMaxInstancesPerApp.value})`,
    );
  const cores = total * coresPerInstance;
  const quotaCores = LIMITS.flexRegionalQuotaCores.value;
  if (cores > quotaCores) problems.push(`${cores} cores: past the default regional Flex quota (${quotaCores} cores): request an increase first`);
  const deployment: Deployment = { region, partitions, serviceBusUnits: units, coresPerInstance };
  return {
    target,
    region,
    partitions,
    shards,
    accounts: Math.min(shards, MAX_SHARDS),
    serviceBus: { tier: units === 0 ? (standardOk ? 'Standard' : 'Premium') : 'Premium', units: standardOk ? 0 : units },
    instances: { total, perApp, cores, quotaCores },
    binding,
    problems,
    limits: limitsOf(load, deployment),
  };
}
