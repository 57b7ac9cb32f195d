/**
 * Past one task hub (infra `shardCount`, docs/deploy.md section 11): how many payments a second one shard carries, how
 * many shards a rate needs, and when Service Bus Standard's credits run out. Read from a run's counts.
 */
import { costPerMillion, type CostOptions, type RunCounts } from './costModel';

/** A storage account's request rate, the limit that binds a task hub first (docs/performance.md, "Capacity"): "Maximum request rate per storage account: 20,000 messages per second" (learn.microsoft.com/azure/storage/queues/scalability-targets). */
export const ACCOUNT_REQUESTS_PER_SECOND = 20_000;

/** Service Bus Standard: "The credit limit is currently set to 1,000 credits every second (per namespace)", a credit per message sent or received (learn.microsoft.com/azure/service-bus-messaging/service-bus-throttling). */
export const STANDARD_CREDITS_PER_SECOND = 1_000;

/** Storage requests a payment on its shard's account (task hub and the consumer's tables: they share the account). */
export function storageRequestsPerPayment(run: RunCounts): number {
  return Object.values(run.storage.workload.requests).reduce((a, n) => a + n, 0) / run.payments;
}

/** Payments a second one shard carries before its account's 20,000 requests a second bind. */
export function paymentsPerSecondPerShard(run: RunCounts): number {
  return ACCOUNT_REQUESTS_PER_SECOND / storageRequestsPerPayment(run);
}

/** Shards a rate needs: ceil(rate / one shard's ceiling). */
export function shardsFor(paymentsPerSecond: number, run: RunCounts): number {
  return Math.max(1, Math.ceil(paymentsPerSecond / paymentsPerSecondPerShard(run)));
}

/** Service Bus operations a payment that draw credits on Standard: send, receive, complete (abandons and renewals are the exception). */
export function creditsPerPayment(run: RunCounts): number {
  return (run.serviceBus.sends + run.serviceBus.receives + run.serviceBus.completes) / run.payments;
}

/** Payments a second a Standard namespace carries before its credits run out (the namespace's other traffic aside). */
export function standardPaymentsPerSecond(run: RunCounts): number {
  return STANDARD_CREDITS_PER_SECOND / creditsPerPayment(run);
}

/** What a shard count costs: a month whatever the traffic, and a million payments at `paymentsPerSecond`. */
export interface ShardCost {
  readonly shards: number;
  /** The tier the rate needs. */
  readonly serviceBus: 'Standard' | 'Premium';
  /** The fixed month on that tier. */
  readonly fixedPerMonth: number;
  /** The fixed month on each tier (Premium at the given messaging units). */
  readonly fixedStandard: number;
  readonly fixedPremium: number;
  /** Variable cost of a million payments (busy view: at this rate executions overlap) on this tier. */
  readonly variablePerMillion: number;
  /** The fixed month's share for the seconds a million payments take at the rate. */
  readonly fixedSharePerMillion: number;
}

/**
 * The cost of `shards` shards: the fixed lines (every shard's always-ready baseline and idle polling, the namespace on
 * the tier the rate needs: Premium at `premiumUnits` messaging units past Standard's credits) and a million payments at
 * `paymentsPerSecond` (the busy view, plus the fixed month's share of the seconds they take).
 */
export function shardCost(run: RunCounts, options: CostOptions, shards: number, paymentsPerSecond: number, premiumUnits: number): ShardCost {
  const premium = paymentsPerSecond > standardPaymentsPerSecond(run);
  const standard = costPerMillion(run, { ...options, shards, serviceBusPremiumUnits: undefined });
  const onPremium = costPerMillion(run, { ...options, shards, serviceBusPremiumUnits: premiumUnits });
  const estimate = premium ? onPremium : standard;
  const seconds = 1_000_000 / paymentsPerSecond;
  return {
    shards,
    serviceBus: premium ? 'Premium' : 'Standard',
    fixedPerMonth: estimate.totals.fixedPerMonth,
    fixedStandard: standard.totals.fixedPerMonth,
    fixedPremium: onPremium.totals.fixedPerMonth,
    variablePerMillion: estimate.totals.variableBusy,
    fixedSharePerMillion: (estimate.totals.fixedPerMonth * seconds) / options.secondsPerMonth,
  };
}
