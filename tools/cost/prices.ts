/**
 * Unit prices the cost script multiplies counts by. **List prices, flagged as such**: USD, pay-as-you-go, East US,
 * as this project recorded them on {@link PRICES_AS_OF} from the pages named in {@link PRICE_SOURCES}; not read
 * from a live pricing page (this machine has no internet). They change and differ by region and redundancy:
 * override each with `--prices name=value,...`.
 */
export const PRICES_AS_OF = '2026-12-01';

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
  /** Flex Consumption on demand: per execution ($0.40 per million). */
  flexExecution: 0.4 / 1_000_000,
  /** Flex Consumption on demand execution time: per GB-s. */
  flexOnDemandGbSecond: 0.000026,
  /** Flex Consumption always ready execution time: per GB-s (while an always-ready instance executes). */
  flexAlwaysReadyExecutionGbSecond: 0.000016,
  /** Flex Consumption always ready baseline: per GB-s of every always-ready instance, busy or not. */
  flexAlwaysReadyBaselineGbSecond: 0.000004,
  /** Service Bus Standard: per operation past the base charge's included 13 M a month ($0.80 per million). */
  serviceBusOperation: 0.8 / 1_000_000,
  /** Application Insights (workspace-based, Analytics logs ingestion): per GB ($2.30). */
  appInsightsGb: 2.3,
} as const;

export type PriceName = keyof typeof DEFAULT_PRICES;
export type Prices = Record<PriceName, number>;

export const PRICE_SOURCES = [
  'https://azure.microsoft.com/pricing/details/functions/ (Flex Consumption: on demand, always ready)',
  'https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing (1,000 ms minimum, then 100 ms rounding)',
  'https://azure.microsoft.com/pricing/details/storage/tables/ , /storage/queues/ , /storage/blobs/ (GPv2, LRS)',
  'https://azure.microsoft.com/pricing/details/service-bus/ (Standard: base charge, operations)',
  'https://azure.microsoft.com/pricing/details/monitor/ (Analytics logs ingestion per GB)',
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
