/**
 * What one payment costs each limit, from the counts of a run on the real Durable engine (`npm run bench:durable`,
 * `runs.<design>` of its `--out` JSON): requests on the shard's storage account without the idle polls, work-item and
 * control-queue messages, orchestration episodes and entity batches, Service Bus credits, and the trigger's CPU.
 */

/** The part of a design's run the sizing reads. */
export interface SizingRun {
  readonly design: string;
  readonly payments: number;
  /** Seconds from the first send until every charge finished. */
  readonly seconds: { readonly finished: number };
  readonly storage: {
    readonly workload: { readonly requests: Readonly<Record<string, number>> };
    readonly idle: { readonly seconds: number; readonly requests: Readonly<Record<string, number>> };
  };
  readonly serviceBus: { readonly sends: number; readonly receives: number; readonly completes: number };
  /** Executions by function: the orchestrator's episodes (`chargePayment`), the entity's batches (`paymentCharge`), activities. */
  readonly durable: { readonly byFunction: Readonly<Record<string, number>> };
  /** Handoff's split phase: CPU ms a message of the trigger (bench process) and the Durable host's start API. */
  readonly split?: { readonly burst: { readonly cpuMsPerMessage?: { readonly benchProcess: number; readonly durableHost?: number } } };
}

/** Orchestrator and entity function names of the payments run (src/app/durableCharge.ts). */
const ORCHESTRATOR = 'chargePayment';
const ENTITY = 'paymentCharge';

/**
 * Requests a payment puts on the account that holds the webhook's event-id records and the API's Idempotency-Key
 * records, when callers use the HTTP API and the provider sends a webhook for each payment, counted on the wire against
 * Azurite (test/integration/httpEdgeRequests.test.ts): the API's record (insert, merge), its `accepted` marker (insert),
 * the webhook's event id (insert, merge) and its Payment row (read, insert).
 */
export const EDGE_REQUESTS_PER_PAYMENT = 7;

/** One payment's load on each limit. */
export interface PaymentLoad {
  readonly design: string;
  readonly payments: number;
  /** Every request on the shard's account (task hub and the consumer's tables) a payment, idle polls included. */
  readonly accountRequestsWithIdle: number;
  /** The same without the polls an idle hub makes (its idle rate times the workload's seconds). */
  readonly accountRequests: number;
  /** Requests a payment on the account of the HTTP records (see {@link EDGE_REQUESTS_PER_PAYMENT}). */
  readonly edgeRequests: number;
  readonly workItemMessages: number;
  readonly controlMessages: number;
  /** Orchestrator episodes a payment (replays of `chargePayment`). */
  readonly orchestrationEpisodes: number;
  /** Entity batches a payment (`paymentCharge`). */
  readonly entityBatches: number;
  /** Activity executions a payment. */
  readonly activities: number;
  /** Work items a payment (episodes, entity batches, activities): what a Durable worker processes. */
  readonly workItems: number;
  /** Service Bus operations that draw credits on Standard: send, receive, complete. */
  readonly serviceBusCredits: number;
  /** CPU ms a message of the trigger and the Durable start API (split phase), undefined when the run had none. */
  readonly triggerCpuMs: number | undefined;
}

/** The per-payment load of `run` (see {@link PaymentLoad}). @throws RangeError for a run with no payments */
export function paymentLoadOf(run: SizingRun): PaymentLoad {
  if (!(run.payments > 0)) throw new RangeError(`a run with payments is needed, got ${run.payments}`);
  const per = (n: number) => n / run.payments;
  let all = 0;
  let workItems = 0;
  let control = 0;
  for (const [key, n] of Object.entries(run.storage.workload.requests)) {
    all += n;
    const [account, service, resource, operation] = key.split('.');
    if (account !== 'durable' || service !== 'queue' || operation !== 'put') continue;
    if (resource === 'workitems') workItems += n;
    else if (resource === 'control') control += n;
  }
  const idle = Object.values(run.storage.idle.requests).reduce((a, b) => a + b, 0);
  const idlePerSecond = run.storage.idle.seconds > 0 ? idle / run.storage.idle.seconds : 0;
  const polls = Math.min(all, idlePerSecond * run.seconds.finished);
  const byFunction = run.durable.byFunction;
  const episodes = byFunction[ORCHESTRATOR] ?? 0;
  const batches = byFunction[ENTITY] ?? 0;
  const activities = Object.entries(byFunction)
    .filter(([name]) => name !== ORCHESTRATOR && name !== ENTITY)
    .reduce((a, [, n]) => a + n, 0);
  const cpu = run.split?.burst.cpuMsPerMessage;
  return {
    design: run.design,
    payments: run.payments,
    accountRequestsWithIdle: per(all),
    accountRequests: per(all - polls),
    edgeRequests: EDGE_REQUESTS_PER_PAYMENT,
    workItemMessages: per(workItems),
    controlMessages: per(control),
    orchestrationEpisodes: per(episodes),
    entityBatches: per(batches),
    activities: per(activities),
    workItems: per(episodes + batches + activities),
    serviceBusCredits: per(run.serviceBus.sends + run.serviceBus.receives + run.serviceBus.completes),
    triggerCpuMs: cpu ? cpu.benchProcess + (cpu.durableHost ?? 0) : undefined,
  };
}
