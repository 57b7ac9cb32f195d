import { ConfigurationError } from 'azure-functions-idempotency';
import type { Settings } from '../config/settings';

/**
 * How long the payments consumer keeps a message (all its deliveries) against how long a charge can
 * take on a cold Durable Functions start. Each delivery waits at most `waitBudgetMs` for the charge,
 * then throws (Service Bus redelivers at once, `deliveryCount + 1`); after `maxDeliveryCount`
 * deliveries the message is dead-lettered. A charge that is still running then completes nobody's
 * message: its payment sits charged in the dead-letter queue. So the deliveries' patience must cover
 * the slowest charge the platform can produce, with room to spare.
 */

/** host.json `extensions.durableTask.storageProvider.maxQueuePollingInterval` (a test holds them equal). */
export const DURABLE_MAX_QUEUE_POLLING_MS = 10_000;

/**
 * Queue hops of one charge, each of which can wait one polling interval on an idle task hub: start ->
 * orchestrator; orchestrator -> entity (begin) -> orchestrator; orchestrator -> activity -> orchestrator;
 * orchestrator -> entity (record) -> orchestrator.
 */
export const CHARGE_QUEUE_HOPS = 9;

/** The holding run's provider retries (its own durable timers, `chargeWithRetries`): first retry after 2 s, doubling, 5 calls. */
export const PROVIDER_RETRY = { firstRetryIntervalMs: 2_000, maxNumberOfAttempts: 5, backoffCoefficient: 2 } as const;

/**
 * host.json `storageProvider.controlQueueVisibilityTimeout` and `workItemQueueVisibilityTimeout` (a test holds
 * them equal): when the Durable host dies holding a charge's queue message (after the provider charged, before
 * the result was recorded), the message reappears only after this long. Seen on the real engine (docs/durable.md):
 * the extension's default is 5 min, which the bound did not count; 1 min is its minimum, and a healthy activity
 * (one provider call of at most PAYMENT_PROVIDER_TIMEOUT_MS) ends well within it.
 */
export const DURABLE_QUEUE_VISIBILITY_MS = 60_000;

/** A Flex Consumption instance start when no instance is ready (documented as seconds; 10 s assumed). */
export const COLD_START_MS = 10_000;

/** Patience must be at least this many times the worst charge. */
export const PATIENCE_SAFETY_FACTOR = 2;

/** The share of a lease one delivery waits: the lease then still covers the completion write. */
export const WAIT_SHARE_OF_LEASE = 0.8;

export interface ChargeTimeBound {
  readonly coldStartMs: number;
  /** One Durable host crash mid-charge: its dequeued message stays hidden for the visibility timeout. */
  readonly hostCrashMs: number;
  readonly queueHopsMs: number;
  readonly providerCallsMs: number;
  readonly retryDelaysMs: number;
  readonly totalMs: number;
}

/** The slowest charge: a cold start, one host crash, every hop waiting a full polling interval, every provider attempt timing out. */
export function worstCaseChargeMs(providerTimeoutMs: number, pollingMs = DURABLE_MAX_QUEUE_POLLING_MS): ChargeTimeBound {
  const { firstRetryIntervalMs, maxNumberOfAttempts, backoffCoefficient } = PROVIDER_RETRY;
  let retryDelaysMs = 0;
  for (let retry = 0; retry < maxNumberOfAttempts - 1; retry++) retryDelaysMs += firstRetryIntervalMs * backoffCoefficient ** retry;
  const queueHopsMs = CHARGE_QUEUE_HOPS * pollingMs;
  const providerCallsMs = maxNumberOfAttempts * providerTimeoutMs;
  const hostCrashMs = DURABLE_QUEUE_VISIBILITY_MS;
  return {
    coldStartMs: COLD_START_MS,
    hostCrashMs,
    queueHopsMs,
    providerCallsMs,
    retryDelaysMs,
    totalMs: COLD_START_MS + hostCrashMs + queueHopsMs + providerCallsMs + retryDelaysMs,
  };
}

/** One delivery's wait budget for `IDEMPOTENCY_LEASE_SECONDS`. */
export function waitBudgetMsOf(settings: Pick<Settings, 'IDEMPOTENCY_LEASE_SECONDS'>): number {
  return Math.floor(settings.IDEMPOTENCY_LEASE_SECONDS * 1000 * WAIT_SHARE_OF_LEASE);
}

/**
 * Refuses settings whose deliveries give up on a charge before a cold Durable start could finish it.
 * @throws ConfigurationError naming the settings and the shortfall.
 * @returns the patience and the bound, for logging.
 */
export function assertPatienceCoversCharge(
  settings: Pick<Settings, 'IDEMPOTENCY_LEASE_SECONDS' | 'SERVICEBUS_MAX_DELIVERY_COUNT' | 'PAYMENT_PROVIDER_TIMEOUT_MS'>,
): { patienceMs: number; bound: ChargeTimeBound } {
  const bound = worstCaseChargeMs(settings.PAYMENT_PROVIDER_TIMEOUT_MS);
  const patienceMs = waitBudgetMsOf(settings) * settings.SERVICEBUS_MAX_DELIVERY_COUNT;
  if (patienceMs < PATIENCE_SAFETY_FACTOR * bound.totalMs) {
    throw new ConfigurationError(
      `SERVICEBUS_MAX_DELIVERY_COUNT (${settings.SERVICEBUS_MAX_DELIVERY_COUNT}) x ${WAIT_SHARE_OF_LEASE} x IDEMPOTENCY_LEASE_SECONDS ` +
        `(${settings.IDEMPOTENCY_LEASE_SECONDS} s) = ${patienceMs / 1000} s of deliveries is less than ${PATIENCE_SAFETY_FACTOR} x the slowest charge ` +
        `(${bound.totalMs / 1000} s: cold start ${bound.coldStartMs / 1000} s + host crash ${bound.hostCrashMs / 1000} s + ${CHARGE_QUEUE_HOPS} queue hops x ${DURABLE_MAX_QUEUE_POLLING_MS / 1000} s + ` +
        `${PROVIDER_RETRY.maxNumberOfAttempts} provider calls x PAYMENT_PROVIDER_TIMEOUT_MS (${settings.PAYMENT_PROVIDER_TIMEOUT_MS} ms) + retry delays ` +
        `${bound.retryDelaysMs / 1000} s): charged payments would reach the dead-letter queue. Raise the delivery count or the lease, or lower the timeout`,
    );
  }
  return { patienceMs, bound };
}

/**
 * Handoff design: a run retries transient provider failures for up to `PAYMENT_RETRY_BUDGET_MINUTES` while its record
 * waits in progress with its claim's lease long lapsed. The record must outlive the run by far, or the expiry sweep
 * could delete it under the running orchestration (its record write would find nothing, and a resubmission would be
 * claimed afresh). So the budget may take at most half the retention.
 * @throws ConfigurationError naming both settings.
 */
export function assertRetryBudgetWithinRetention(settings: Pick<Settings, 'PAYMENT_RETRY_BUDGET_MINUTES' | 'IDEMPOTENCY_RETENTION_DAYS'>): void {
  const budgetMs = settings.PAYMENT_RETRY_BUDGET_MINUTES * 60_000;
  const retentionMs = settings.IDEMPOTENCY_RETENTION_DAYS * 86_400_000;
  if (budgetMs > retentionMs / 2)
    throw new ConfigurationError(
      `PAYMENT_RETRY_BUDGET_MINUTES (${settings.PAYMENT_RETRY_BUDGET_MINUTES} min) is more than half of IDEMPOTENCY_RETENTION_DAYS ` +
        `(${settings.IDEMPOTENCY_RETENTION_DAYS} days): a run still retrying could outlive its record. Lower the budget or raise the retention`,
    );
}

/**
 * Handoff design: once a delivery is acknowledged, a record whose run ended without writing it (terminated by an
 * operator, failed, lost) is found only by the reconciler, which reads it once its claim's lease has lapsed (plus a
 * 5 min grace) at an expiry timer tick, after that tick's sweep. The sweep deletes an in-progress record as soon as its
 * retention has ended and its lease lapsed, so a lease that reaches (or nearly reaches) the end of the retention leaves
 * the reconciler no tick before the record, the only trace of the accepted payment, is gone. So the lease may take at
 * most half the retention, as the retry budget may: the reconciler then has the other half.
 * @throws ConfigurationError naming both settings.
 */
export function assertLeaseWithinRetention(settings: Pick<Settings, 'IDEMPOTENCY_LEASE_SECONDS' | 'IDEMPOTENCY_RETENTION_DAYS'>): void {
  const leaseMs = settings.IDEMPOTENCY_LEASE_SECONDS * 1000;
  const retentionMs = settings.IDEMPOTENCY_RETENTION_DAYS * 86_400_000;
  if (leaseMs > retentionMs / 2)
    throw new ConfigurationError(
      `IDEMPOTENCY_LEASE_SECONDS (${settings.IDEMPOTENCY_LEASE_SECONDS} s) is more than half of IDEMPOTENCY_RETENTION_DAYS ` +
        `(${settings.IDEMPOTENCY_RETENTION_DAYS} days): a record whose run ended could be swept before the reconciler restarts it. Lower the lease or raise the retention`,
    );
}
