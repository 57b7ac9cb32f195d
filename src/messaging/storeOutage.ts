import { StoreUnavailableError } from 'azure-functions-idempotency';

/**
 * Riding out a store outage inside one delivery (docs/durable.md "A storage outage of minutes"). A delivery that
 * throws as soon as the store fails is abandoned, Service Bus redelivers it at once, and `maxDeliveryCount` is spent
 * in seconds while the store is down: a few minutes of outage fill the dead-letter queue. Instead the delivery waits
 * and tries again, in the same invocation, while the Functions host renews the message lock, for as long as the host
 * renews it (host.json `maxAutoLockRenewalDuration`) less one attempt's worst time. Only then is it abandoned (one
 * delivery spent per ~4 minutes of outage: 10 deliveries ride out ~40 minutes). Service Bus sees a slow delivery,
 * not a failed one; an operator sees `messages.store_outage.waits` and its alert, not a full dead-letter queue.
 *
 * Why not a delayed retry (a scheduled copy of the message, then complete the original): the copy is a new message
 * that the queue's duplicate detection drops when it carries the same MessageId (and, with another id, the dedup
 * key would change); the schedule itself is a Service Bus write that can fail; the lock renewal costs nothing.
 */

/** host.json `extensions.serviceBus.maxAutoLockRenewalDuration` (a test holds them equal). */
export const HOST_MAX_AUTO_LOCK_RENEWAL_MS = 300_000;

/** How a delivery waits out a store outage: until `budgetMs` after it began, first delay, doubling, capped. */
export interface RideOutPlan {
  readonly budgetMs: number;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
}

/** No riding out: the first store failure is thrown (the holding tests and rigs that want the old behaviour). */
export const NO_RIDE_OUT: RideOutPlan = { budgetMs: 0, firstDelayMs: 1_000, maxDelayMs: 1_000 };

/**
 * The plan for a delivery whose single attempt can take up to `attemptMs` (the wait for another delivery's lease,
 * plus its store calls): every new attempt starts early enough to end while the host still renews the lock.
 */
export function rideOutPlanOf(options: { maxAutoLockRenewalMs?: number; attemptMs: number }): RideOutPlan {
  const budgetMs = Math.max(0, (options.maxAutoLockRenewalMs ?? HOST_MAX_AUTO_LOCK_RENEWAL_MS) - options.attemptMs);
  return { budgetMs, firstDelayMs: 1_000, maxDelayMs: 15_000 };
}

/**
 * The wait before try `waits + 2` when a try failed `elapsedMs` after the delivery began, or undefined when the next
 * try would start past the budget (then the failure is thrown and the message abandoned). Pure.
 */
export function nextOutageWaitMs(plan: RideOutPlan, elapsedMs: number, waits: number): number | undefined {
  const delayMs = Math.min(plan.maxDelayMs, plan.firstDelayMs * 2 ** Math.min(waits, 20));
  return elapsedMs + delayMs > plan.budgetMs ? undefined : delayMs;
}

/** What the loop tells its caller (telemetry). */
export interface RideOutReport {
  /** A try failed with the store unavailable; the delivery waits `delayMs` (the `waits`-th wait, 1-based). */
  waiting(waits: number, delayMs: number, error: StoreUnavailableError): void;
  /** A try succeeded after `waits` waits, `waitedMs` after the delivery began. */
  recovered(waits: number, waitedMs: number): void;
  /** The budget is spent: the failure is thrown (the message is abandoned, its delivery count spent). */
  gaveUp(waits: number, waitedMs: number, error: StoreUnavailableError): void;
}

/**
 * Runs `attempt` (one whole delivery: re-running it is what a redelivery would do), again after a wait each time it
 * fails with {@link StoreUnavailableError}, as {@link nextOutageWaitMs} allows. Any other error is thrown at once.
 */
export async function rideOutStoreOutage<T>(
  attempt: () => Promise<T>,
  deps: { plan: RideOutPlan; nowMs?: () => number; sleep?: (ms: number) => Promise<void>; report?: Partial<RideOutReport> },
): Promise<T> {
  const nowMs = deps.nowMs ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const began = nowMs();
  for (let waits = 0; ; waits++) {
    try {
      const result = await attempt();
      if (waits > 0) deps.report?.recovered?.(waits, nowMs() - began);
      return result;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      const delayMs = nextOutageWaitMs(deps.plan, nowMs() - began, waits);
      if (delayMs === undefined) {
        if (waits > 0 || deps.plan.budgetMs > 0) deps.report?.gaveUp?.(waits, nowMs() - began, error);
        throw error;
      }
      deps.report?.waiting?.(waits + 1, delayMs, error);
      await sleep(delayMs);
    }
  }
}
