import { mulberry32 } from '../fakeProvider/random';
import { PAYMENT_SUCCEEDED, pointsFor, type PaymentSucceeded } from '../../src/rewards/rewardEvent';

/**
 * The rewards producer's plan (pure): `PaymentSucceeded` CloudEvents (source + id: the key the consumer dedups on),
 * the customer id as partition key, and producer retries: the same event again, which Event Hubs appends anew.
 */

/** How a CloudEvent travels: structured (the whole event as the JSON body) or binary (`cloudEvents:*` properties, the data as the body). */
export type CloudEventMode = 'structured' | 'binary';

export interface RewardsPlanOptions {
  /** Distinct payments. */
  readonly count: number;
  /** Customers the payments are spread over (`<customerPrefix>-0` ...). */
  readonly customers: number;
  /** Every event sent this many more times, unchanged (producer retries). */
  readonly retries: number;
  /** Share (0-1) of the events that get the retries; 1 = every event. */
  readonly retryShare: number;
  readonly idPrefix: string;
  readonly customerPrefix: string;
  /** CloudEvent `source`. */
  readonly source: string;
  readonly currency: string;
  readonly mode: CloudEventMode;
  /** Seed of the amounts, customers and which events are retried (the same seed, the same plan). */
  readonly seed: number;
}

/** One send: the event (or its data in binary mode), its partition key and properties, and why it is sent. */
export interface PlannedEvent {
  readonly paymentId: string;
  readonly customerId: string;
  readonly points: number;
  readonly body: unknown;
  readonly partitionKey: string;
  readonly properties: Readonly<Record<string, string>>;
  /** `original`, or `retry` (the same event again). */
  readonly sendReason: 'original' | 'retry';
}

/** The plan, in send order: each payment, then its retries right after it (as a producer that retries at once). */
export function buildRewardsPlan(options: RewardsPlanOptions): PlannedEvent[] {
  const random = mulberry32(options.seed);
  const plan: PlannedEvent[] = [];
  for (let i = 0; i < options.count; i++) {
    const paymentId = `${options.idPrefix}-${String(i + 1).padStart(4, '0')}`;
    const customerId = `${options.customerPrefix}-${Math.floor(random() * options.customers)}`;
    const data: PaymentSucceeded = { paymentId, customerId, amount: 100 + Math.floor(random() * 50_000), currency: options.currency };
    const retried = random() < options.retryShare;
    const attributes = { specversion: '1.0', type: PAYMENT_SUCCEEDED, source: options.source, id: paymentId, datacontenttype: 'application/json' };
    const original: PlannedEvent = {
      paymentId,
      customerId,
      points: pointsFor(data.amount),
      body: options.mode === 'structured' ? { ...attributes, data } : data,
      partitionKey: customerId,
      properties: options.mode === 'structured' ? {} : Object.fromEntries(Object.entries(attributes).map(([k, v]) => [`cloudEvents:${k}`, v])),
      sendReason: 'original',
    };
    plan.push(original);
    if (retried) for (let r = 0; r < options.retries; r++) plan.push({ ...original, sendReason: 'retry' });
  }
  return plan;
}

/** What every balance must be once the plan was consumed: per customer, the points of its distinct payments. */
export function expectedBalances(plan: readonly PlannedEvent[]): Map<string, number> {
  const seen = new Set<string>();
  const balances = new Map<string, number>();
  for (const event of plan) {
    if (seen.has(event.paymentId)) continue;
    seen.add(event.paymentId);
    balances.set(event.customerId, (balances.get(event.customerId) ?? 0) + event.points);
  }
  return balances;
}
