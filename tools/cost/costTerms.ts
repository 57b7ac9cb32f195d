/** The bill read back: its terms, the Cosmos store's lines, the queue operations a cost goal allows. */
import type { Prices } from './prices';
import { type RunCounts, type CostOptions, type CostLine, line, costPerMillion } from './costModel';

/** The bill's terms: its lines summed by what they pay for. */
export interface CostTerms {
  readonly compute: number;
  readonly storage: number;
  readonly serviceBus: number;
  readonly executions: number;
  readonly applicationInsights: number;
}

/** Sums lines into terms (compute = the GB-s lines; storage = every `storage:` line and Cosmos RUs) and names the largest. */
export function termsOf(lines: readonly CostLine[]): { terms: CostTerms; largest: keyof CostTerms } {
  const terms = { compute: 0, storage: 0, serviceBus: 0, executions: 0, applicationInsights: 0 };
  for (const l of lines) {
    if (l.unit === 'GB-s') terms.compute += l.usdPerMillion;
    else if (l.name.startsWith('storage:') || l.unit === 'RU') terms.storage += l.usdPerMillion;
    else if (l.unit === 'operation') terms.serviceBus += l.usdPerMillion;
    else if (l.unit === 'execution') terms.executions += l.usdPerMillion;
    else if (l.unit === 'GB') terms.applicationInsights += l.usdPerMillion;
    else throw new Error(`cost line '${l.name}' (${l.unit}) belongs to no term`);
  }
  const largest = (Object.keys(terms) as Array<keyof CostTerms>).reduce((a, b) => (terms[b] > terms[a] ? b : a));
  return { terms, largest };
}

/**
 * Request units a payment costs on the Cosmos store (`IDEMPOTENCY_STORE=cosmos`, docs/stores.md): the claim's
 * create, the completion's replace, and the TTL deletion of the record when its `ttl` ends, which Cosmos DB serverless
 * bills "in RUs at the same rate as delete item operations" (learn.microsoft.com/azure/cosmos-db/time-to-live).
 * Typical figures for a ~1 KB item with no indexed path (docs/stores.md's cost row), NOT measured here: the emulator
 * charges a flat 1 RU a request. Pass your container's figures (the `x-ms-request-charge` of each request) to
 * {@link cosmosStoreLines}.
 */
export const COSMOS_RU_PER_PAYMENT = { create: 6, replace: 10, ttlDelete: 6 } as const;

/** The Cosmos store's lines per payment, in place of the claim tables' (`storage: claim tables`). */
export function cosmosStoreLines(prices: Prices, ru: { create: number; replace: number; ttlDelete: number } = COSMOS_RU_PER_PAYMENT): CostLine[] {
  return [
    line('cosmos: claim create + completion replace (RU, typical, not measured)', ru.create + ru.replace, 'RU', prices.cosmosRequestUnit),
    line('cosmos: TTL deletion of the record (billed in RUs like a delete; typical, not measured)', ru.ttlDelete, 'RU', prices.cosmosRequestUnit),
  ];
}

/**
 * The Durable queue class-1 operations a payment at which the busy total meets the goal (the total is linear in them:
 * puts, deletes and gets scale together), or undefined when even none would.
 */
export function queueOpsForGoal(run: RunCounts, options: CostOptions, goalUsd: number): number | undefined {
  const at = (ops: number) => costPerMillion(run, { ...options, durableQueueOpsPerPayment: ops }).totals.variableBusy;
  const base = at(0);
  const perOp = (at(12) - base) / 12;
  if (base > goalUsd || !(perOp > 0)) return undefined;
  return (goalUsd - base) / perOp;
}
