/**
 * The published figures the sizing divides by (issue 63), each with its source and what it is: `published` (a limit or
 * benchmark figure on a Microsoft page, not measured here), `recalled` (a published default whose page could not be
 * re-read from this machine: check it before relying on it) or `assumption` (no figure is published; a planning value
 * to check against the live service). Nothing here was measured in Azure.
 */

/** How a figure is known. */
export const FigureKind = {
  Published: 'published',
  Recalled: 'recalled',
  Assumption: 'assumption',
  /** A setting of this project's template, within the published limit. */
  Deployed: 'deployed',
} as const;
export type FigureKind = (typeof FigureKind)[keyof typeof FigureKind];

/** One figure: its value and unit, where it is written and how it is known. */
export interface Figure {
  readonly value: number;
  readonly unit: string;
  readonly kind: FigureKind;
  readonly source: string;
}

const STORAGE_TARGETS = 'https://learn.microsoft.com/azure/storage/common/scalability-targets-standard-account';

/**
 * Regions where a general-purpose v2 account's default maximum request rate is 40,000 a second (the page's list,
 * 2026); elsewhere 20,000. Region names as Azure writes them (`az account list-locations`).
 */
export const REGIONS_AT_40K: ReadonlySet<string> = new Set([
  'eastasia',
  'southeastasia',
  'australiaeast',
  'brazilsouth',
  'canadacentral',
  'chinaeast2',
  'chinanorth3',
  'northeurope',
  'westeurope',
  'francecentral',
  'germanywestcentral',
  'centralindia',
  'japaneast',
  'jioindiawest',
  'koreacentral',
  'norwayeast',
  'southafricanorth',
  'swedencentral',
  'uaenorth',
  'uksouth',
  'centralus',
  'eastus',
  'eastus2',
  'usgovvirginia',
  'usgovarizona',
  'northcentralus',
  'southcentralus',
  'westus',
  'westus2',
  'westus3',
]);

/**
 * A storage account's default maximum request rate in `region`: 40,000 a second in the listed regions, 20,000
 * elsewhere ("Scalability and performance targets for standard storage accounts").
 * @example accountRequestsPerSecond('swedencentral').value // 40000
 */
export function accountRequestsPerSecond(region: string): Figure {
  const at40k = REGIONS_AT_40K.has(region.toLowerCase().replace(/[\s-]/g, ''));
  return {
    value: at40k ? 40_000 : 20_000,
    unit: 'requests/s per storage account',
    kind: FigureKind.Published,
    source: `${STORAGE_TARGETS} (${region}: ${at40k ? 'a listed region, 40,000' : 'not listed, 20,000'})`,
  };
}

/** Every published or assumed figure besides the account's rate (which depends on the region). */
export const LIMITS = {
  queueMessagesPerSecond: {
    value: 2_000,
    unit: 'messages/s per queue (1 KiB)',
    kind: FigureKind.Published,
    source: 'https://learn.microsoft.com/azure/storage/queues/scalability-targets',
  },
  /**
   * Orchestrations a second one task hub on the Azure Storage provider runs: "on the order of 120-140" at the default 4
   * partitions, about 200 with more (16). The low end of each, for sizing.
   */
  durableOrchestrationsPerSecondP4: {
    value: 120,
    unit: 'orchestrations/s per task hub, 4 partitions',
    kind: FigureKind.Published,
    source: 'https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-perf-and-scale (and its benchmarks; order of magnitude, 120-140)',
  },
  durableOrchestrationsPerSecondP16: {
    value: 200,
    unit: 'orchestrations/s per task hub, 16 partitions',
    kind: FigureKind.Published,
    source: 'https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-perf-and-scale (and its benchmarks; order of magnitude)',
  },
  /** The Azure Storage provider's work items a second on one Elastic Premium EP2 worker (2 cores), Microsoft's benchmark. */
  durableWorkItemsPerSecondPerEp2Worker: {
    value: 250,
    unit: 'work items/s per EP2 worker (2 cores), Azure Storage provider',
    kind: FigureKind.Published,
    source:
      'https://learn.microsoft.com/azure/durable-task/scheduler/durable-task-scheduler-work-item-throughput (Azure Storage: ~250, ~430, ~830 with 1, 2, 4 EP2 workers)',
  },
  serviceBusStandardCreditsPerSecond: {
    value: 1_000,
    unit: 'credits/s per Standard namespace (one per message sent or received)',
    kind: FigureKind.Published,
    source: 'https://learn.microsoft.com/azure/service-bus-messaging/service-bus-throttling',
  },
  /**
   * Microsoft publishes no message rate per messaging unit (it says: start with 1-2 units, add units above 70 % CPU).
   * A planning value, to check with the namespace's CPU metric or Microsoft's benchmark sample.
   */
  serviceBusPremiumOperationsPerSecondPerUnit: {
    value: 2_000,
    unit: 'operations/s per Premium messaging unit (1 KiB messages)',
    kind: FigureKind.Assumption,
    source:
      'none published: https://learn.microsoft.com/azure/service-bus-messaging/service-bus-premium-messaging ("how many messaging units": scale up above 70 % CPU); measure with github.com/Azure-Samples/service-bus-dotnet-messaging-performance',
  },
  /** Capacity of a Premium namespace: 1, 2, 4, 8, 16 units with 1 messaging partition; 4 to 64 (multiples) with 4 partitions. */
  serviceBusPremiumMaxUnits: {
    value: 64,
    unit: 'messaging units per Premium namespace (with 4 messaging partitions; 16 with 1)',
    kind: FigureKind.Published,
    source:
      'https://learn.microsoft.com/dotnet/api/azure.resourcemanager.servicebus.models.servicebussku.capacity ("{1, 2, 4, 8, 16} multiples of premiumMessagingPartitions")',
  },
  flexMaxInstancesPerApp: {
    value: 1_000,
    unit: 'instances per Flex Consumption app',
    kind: FigureKind.Published,
    source: 'https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan ("Scale-out instances (max) 1000")',
  },
  /** What the template deploys: infra/app/api.bicep `maximumInstanceCount` (raise it there, up to Flex's 1,000). */
  appMaximumInstanceCount: {
    value: 100,
    unit: 'instances per app as deployed (maximumInstanceCount)',
    kind: FigureKind.Deployed,
    source: 'infra/app/api.bicep maximumInstanceCount (Flex allows up to 1,000)',
  },
  /** The default regional subscription quota of all Flex Consumption apps together: 512,000 MB, 250 cores. */
  flexRegionalQuotaCores: {
    value: 250,
    unit: 'cores per subscription and region, all Flex Consumption apps (default quota; raised on request)',
    kind: FigureKind.Recalled,
    source:
      'https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#regional-subscription-memory-quotas (default 512,000 MB; not re-read here)',
  },
} as const satisfies Record<string, Figure>;

/** The published orchestrations a second of one hub with `partitions` control queues (4 or fewer: the 4-partition figure). */
export function durableOrchestrationsPerSecond(partitions: number): Figure {
  return partitions > 4 ? LIMITS.durableOrchestrationsPerSecondP16 : LIMITS.durableOrchestrationsPerSecondP4;
}

/** `published`, `deployed`, `RECALLED` or `ASSUMPTION`, as the sizing prints a figure's kind. */
export function kindLabel(kind: FigureKind): string {
  return kind === FigureKind.Published || kind === FigureKind.Deployed ? kind : kind.toUpperCase();
}
