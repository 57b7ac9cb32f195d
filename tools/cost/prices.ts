/**
 * Unit prices the cost script multiplies counts by. **List prices, flagged as such**: USD, pay-as-you-go, East US,
 * as this project recorded them on the dates in {@link PRICE_SOURCES}, from the pages named there; **none was read
 * from a live pricing page** (this machine has no internet; Azure's pricing pages render their prices by script, so
 * the stored copies the search tool holds do not carry them). They change and differ by region and redundancy:
 * override each with `--prices name=value,...`. Billing *rules* (what is billed, minimums, grants) were read here
 * where {@link PRICE_SOURCES} says `read`.
 */
export const PRICES_AS_OF = '2026-12-02';

export const DEFAULT_PRICES = {
  /** Table Storage (GPv2, LRS): per transaction ($0.00036 per 10,000). A `$batch` bills as one. */
  tableTransaction: 0.00036 / 10_000,
  /** Queue Storage (GPv2, LRS) class 1 = writes (put, update, delete, create): $0.04 per 10,000. */
  queueClass1: 0.04 / 10_000,
  /** Queue Storage class 2 = reads (get/dequeue, peek, metadata), empty gets too: $0.004 per 10,000. */
  queueClass2: 0.004 / 10_000,
  /** Blob Storage (hot, LRS) write operations, leases included: $0.05 per 10,000. */
  blobWrite: 0.05 / 10_000,
  /** Blob read operations: $0.004 per 10,000. */
  blobRead: 0.004 / 10_000,
  /** Blob "all other operations": $0.004 per 10,000. */
  blobOther: 0.004 / 10_000,
  /** Flex Consumption on demand: per execution ($0.40 per million). Always-ready executions bill the same. */
  flexExecution: 0.4 / 1_000_000,
  /** Flex Consumption on demand execution time: per GB-s. */
  flexOnDemandGbSecond: 0.000026,
  /** Flex Consumption always ready execution time: per GB-s (while an always-ready instance executes). */
  flexAlwaysReadyExecutionGbSecond: 0.000016,
  /** Flex Consumption always ready baseline: per GB-s of every always-ready instance, busy or not. */
  flexAlwaysReadyBaselineGbSecond: 0.000004,
  /** Service Bus Standard: per operation past the base charge's included 13 M a month ($0.80 per million). */
  serviceBusOperation: 0.8 / 1_000_000,
  /** Service Bus Standard base charge: per hour of the namespace ($0.0135, about $10 a month). */
  serviceBusBaseHour: 0.0135,
  /** Event Hubs Standard: per throughput unit and hour ($0.03; infra deploys 1 TU, auto-inflate off). */
  eventHubsThroughputUnitHour: 0.03,
  /** Cosmos DB serverless: per request unit ($0.25 per million RUs). */
  cosmosRequestUnit: 0.25 / 1_000_000,
  /** Application Insights (workspace-based, Analytics logs ingestion): per GB ($2.30). */
  appInsightsGb: 2.3,
} as const;

export type PriceName = keyof typeof DEFAULT_PRICES;
export type Prices = Record<PriceName, number>;

/** What a month includes free of charge (pay-as-you-go), applied by the month view of `npm run cost`. */
export const MONTHLY_GRANTS = {
  /** Flex Consumption on demand: GB-s per subscription a month (always ready has none). */
  flexOnDemandGbSeconds: 100_000,
  /** Flex Consumption on demand: executions per subscription a month (always ready has none). */
  flexOnDemandExecutions: 250_000,
  /** Service Bus Standard: operations included in the base charge a month. */
  serviceBusOperations: 13_000_000,
  /** Log Analytics (Analytics logs): GB ingested free per billing account a month. */
  logAnalyticsGb: 5,
} as const;

/** One source of a price, a grant or a billing rule: where, when, and whether its text was read here. */
export interface PriceSource {
  readonly covers: string;
  readonly url: string;
  /** When this project recorded the figure. */
  readonly asOf: string;
  /** `read`: the page's text was read here (a stored copy); `recorded`: the figure is as recorded, NOT read here. */
  readonly status: 'read' | 'recorded';
}

export const PRICE_SOURCES: readonly PriceSource[] = [
  {
    covers: 'Flex Consumption prices (on demand, always ready) and its free grant (100,000 GB-s, 250,000 executions on demand)',
    url: 'https://azure.microsoft.com/pricing/details/functions/',
    asOf: '2026-12-02',
    status: 'recorded',
  },
  {
    covers: 'Flex billing rule: 1,000 ms minimum, then 100 ms rounding',
    url: 'https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing',
    asOf: '2026-12-01',
    status: 'read',
  },
  {
    covers: 'Table, Queue (class 1 / class 2) and Blob operation prices, GPv2 LRS',
    url: 'https://azure.microsoft.com/pricing/details/storage/queues/ , /storage/tables/ , /storage/blobs/',
    asOf: '2026-12-01',
    status: 'recorded',
  },
  {
    covers: 'Service Bus Standard: base charge per hour, 13 M operations included, $0.80 per million past them',
    url: 'https://azure.microsoft.com/pricing/details/service-bus/',
    asOf: '2026-12-02',
    status: 'recorded',
  },
  {
    covers: 'Event Hubs Standard: throughput unit per hour (1 TU in infra/core/messaging/eventHubs.bicep)',
    url: 'https://azure.microsoft.com/pricing/details/event-hubs/',
    asOf: '2026-12-02',
    status: 'recorded',
  },
  {
    covers: 'Cosmos DB serverless: price per million RUs',
    url: 'https://azure.microsoft.com/pricing/details/cosmos-db/serverless/',
    asOf: '2026-12-02',
    status: 'recorded',
  },
  {
    covers: 'Cosmos DB TTL rule: "For serverless accounts, the deletion of expired items is charged in RUs at the same rate as delete item operations"',
    url: 'https://learn.microsoft.com/azure/cosmos-db/time-to-live',
    asOf: '2026-12-02',
    status: 'read',
  },
  {
    covers: 'Analytics logs ingestion per GB, 5 GB a month free per billing account',
    url: 'https://azure.microsoft.com/pricing/details/monitor/',
    asOf: '2026-12-01',
    status: 'recorded',
  },
];

/**
 * The default prices with `name=value` overrides applied.
 * @throws Error naming the override when the name is unknown or the value is not a number >= 0.
 */
export function pricesWith(overrides: readonly string[]): Prices {
  const prices: Prices = { ...DEFAULT_PRICES };
  for (const text of overrides) {
    const [name, value, ...rest] = text.split('=');
    if (!(name in prices) || rest.length > 0) throw new Error(`--prices ${text}: expected name=value with a name among ${Object.keys(prices).join(', ')}`);
    const number = Number(value);
    if (value === undefined || value.trim() === '' || !Number.isFinite(number) || number < 0)
      throw new Error(`--prices ${text}: the value must be a number >= 0`);
    prices[name as PriceName] = number;
  }
  return prices;
}
