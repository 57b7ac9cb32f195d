import type { CostEstimate, CostLine } from './costModel';
import { MONTHLY_GRANTS } from './prices';

/** One line of a month's bill: what the month uses, what a grant covers of it, and the dollars left. */
export interface MonthLine {
  readonly name: string;
  readonly usdBeforeGrant: number;
  /** What the grant covers (in the line's unit), 0 when none applies. */
  readonly granted: number;
  readonly unit: string;
  readonly usd: number;
}

/** Grants by the line they apply to (name prefix), in the line's unit. */
const GRANTS: ReadonlyArray<{ prefix: string; amount: number }> = [
  { prefix: 'Flex on-demand GB-s', amount: MONTHLY_GRANTS.flexOnDemandGbSeconds },
  { prefix: 'Flex executions on demand', amount: MONTHLY_GRANTS.flexOnDemandExecutions },
  { prefix: 'Service Bus operations', amount: MONTHLY_GRANTS.serviceBusOperations },
];

/**
 * A month's bill for `paymentsPerMonth` payments: each variable line of `view` (busy or sparse) scaled to the month,
 * the free grants applied where they belong (Flex on demand: 100,000 GB-s and 250,000 executions; Service Bus: 13 M
 * operations in the base charge; Log Analytics: 5 GB, shared by every Application Insights line), plus the fixed
 * lines. Grants are per subscription or billing account: another app there uses them too.
 */
export function monthBill(estimate: CostEstimate, view: readonly CostLine[], paymentsPerMonth: number): { lines: MonthLine[]; total: number } {
  if (!(paymentsPerMonth >= 0)) throw new RangeError(`payments a month must be >= 0 (got ${paymentsPerMonth})`);
  const lines: MonthLine[] = [];
  let logGbLeft: number = MONTHLY_GRANTS.logAnalyticsGb;
  for (const l of view) {
    const used = l.perPayment * paymentsPerMonth;
    const usdBeforeGrant = used * l.unitPrice;
    let granted = GRANTS.find((g) => l.name.startsWith(g.prefix))?.amount ?? 0;
    if (l.unit === 'GB') {
      granted = logGbLeft;
      logGbLeft = Math.max(0, logGbLeft - used);
    }
    const billed = Math.max(0, used - granted);
    lines.push({ name: l.name, usdBeforeGrant, granted: Math.min(granted, used), unit: l.unit, usd: billed * l.unitPrice });
  }
  for (const l of estimate.fixedPerMonth) lines.push({ name: l.name, usdBeforeGrant: l.usdPerMillion, granted: 0, unit: l.unit, usd: l.usdPerMillion });
  return { lines, total: lines.reduce((a, l) => a + l.usd, 0) };
}
