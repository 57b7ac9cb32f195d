/**
 * One task hub's ceiling in payments a second, from the counts of a run on the real engine (issue 52): each shard's
 * storage account carries its task hub and its idempotency table, so every request of a payment counts against the
 * account's target; the work-item queue and the control queues each against a queue's target. The smallest of the
 * three is the hub's ceiling from storage; N shards (one account each) carry N times it.
 */

/** Azure's published targets the ceiling divides by, each with where it is written. */
export const STORAGE_LIMITS = {
  accountRequestsPerSecond: {
    value: 20_000,
    source: 'https://learn.microsoft.com/azure/storage/common/scalability-targets-standard-account (and queues/scalability-targets)',
  },
  queueMessagesPerSecond: { value: 2_000, source: 'https://learn.microsoft.com/azure/storage/queues/scalability-targets (1 KiB messages)' },
  defaultPartitions: {
    value: 4,
    source: 'https://learn.microsoft.com/dotnet/api/microsoft.azure.webjobs.extensions.durabletask.azurestorageoptions.partitioncount (default 4, at most 16)',
  },
} as const;

/** The per-payment counts the ceiling reads, from a run's storage requests (`account.service.resource.operation`). */
export interface HubLoad {
  /** Every request on the shard's account (task hub and consumer table) per payment. */
  readonly accountRequests: number;
  /** Messages put on the work-item queue per payment (activities). */
  readonly workItemMessages: number;
  /** Messages put on the control queues per payment (starts, answers, entity operations, timers). */
  readonly controlMessages: number;
}

export interface HubCeiling {
  readonly load: HubLoad;
  readonly partitions: number;
  /** Payments a second each limit allows. */
  readonly byAccount: number;
  readonly byWorkItemQueue: number;
  readonly byControlQueues: number;
  readonly ceiling: number;
  readonly boundBy: 'account' | 'work-item queue' | 'control queues';
}

/** The per-payment load of a run: `requests` counted on the wire over `payments` payments. */
export function hubLoadOf(requests: Readonly<Record<string, number>>, payments: number): HubLoad {
  let all = 0;
  let workItems = 0;
  let control = 0;
  for (const [key, n] of Object.entries(requests)) {
    all += n;
    const [account, service, resource, operation] = key.split('.');
    if (account !== 'durable' || service !== 'queue' || operation !== 'put') continue;
    if (resource === 'workitems') workItems += n;
    else if (resource === 'control') control += n;
  }
  return { accountRequests: all / payments, workItemMessages: workItems / payments, controlMessages: control / payments };
}

/** The hub's ceiling for `load` with `partitions` control queues. */
export function hubCeilingOf(load: HubLoad, partitions: number = STORAGE_LIMITS.defaultPartitions.value): HubCeiling {
  const per = (limit: number, n: number) => (n > 0 ? limit / n : Number.POSITIVE_INFINITY);
  const byAccount = per(STORAGE_LIMITS.accountRequestsPerSecond.value, load.accountRequests);
  const byWorkItemQueue = per(STORAGE_LIMITS.queueMessagesPerSecond.value, load.workItemMessages);
  const byControlQueues = per(partitions * STORAGE_LIMITS.queueMessagesPerSecond.value, load.controlMessages);
  const bounds = [
    ['account', byAccount],
    ['work-item queue', byWorkItemQueue],
    ['control queues', byControlQueues],
  ] as const;
  const [boundBy, ceiling] = bounds.reduce((a, b) => (b[1] < a[1] ? b : a));
  return { load, partitions, byAccount, byWorkItemQueue, byControlQueues, ceiling, boundBy };
}

/** Shards needed for `target` payments a second at `ceiling` each. */
export function shardsFor(target: number, ceiling: number): number {
  if (!(ceiling > 0) || !Number.isFinite(ceiling)) throw new RangeError(`a hub ceiling is a positive number, got ${ceiling}`);
  return Math.ceil(target / ceiling);
}

/** The lines the bench prints: the load, each limit with its source, the ceiling, and N for `target`. */
export function hubCeilingLines(design: string, ceiling: HubCeiling, target = 2_000): string[] {
  const r = (n: number) => (Number.isFinite(n) ? String(Math.round(n * 100) / 100) : 'unbounded');
  const { load, partitions } = ceiling;
  const limits = STORAGE_LIMITS;
  return [
    `${design}: per payment ${r(load.accountRequests)} requests on the shard's account, ${r(load.workItemMessages)} work-item and ${r(load.controlMessages)} control-queue messages`,
    `${design}: one hub's ceiling: account ${limits.accountRequestsPerSecond.value} req/s / ${r(load.accountRequests)} = ${r(ceiling.byAccount)}/s; ` +
      `work-item queue ${limits.queueMessagesPerSecond.value} msg/s / ${r(load.workItemMessages)} = ${r(ceiling.byWorkItemQueue)}/s; ` +
      `control queues ${partitions} x ${limits.queueMessagesPerSecond.value} msg/s / ${r(load.controlMessages)} = ${r(ceiling.byControlQueues)}/s: ` +
      `${r(ceiling.ceiling)} payments/s (${ceiling.boundBy})`,
    `${design}: shards for ${target} payments/s: ${shardsFor(target, ceiling.ceiling)} (one storage account each)`,
    `  sources: ${limits.accountRequestsPerSecond.source}; ${limits.queueMessagesPerSecond.source}; ${limits.defaultPartitions.source}`,
  ];
}
