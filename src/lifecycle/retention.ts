import { ConfigurationError } from 'azure-functions-idempotency';
import type { Settings } from '../config/settings';

const SECOND_MS = 1_000;
const DAY_MS = 86_400_000;

/**
 * The longest one delivery can keep a message locked when the Functions host auto-renews the
 * lock: host.json `extensions.serviceBus.maxAutoLockRenewalDuration` (default 5 minutes); the last
 * renewed lock then runs for one more lock duration. See docs/lifecycle.md.
 */
export const DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS = 5 * 60_000;

/** The settings the retention rule reads. */
export type RetentionSettings = Pick<
  Settings,
  | 'IDEMPOTENCY_RETENTION_DAYS'
  | 'SERVICEBUS_LOCK_DURATION_SECONDS'
  | 'SERVICEBUS_MAX_DELIVERY_COUNT'
  | 'SERVICEBUS_MESSAGE_TTL_SECONDS'
  | 'DLQ_RESUBMIT_MARGIN_DAYS'
>;

export interface RedeliveryWindowOptions {
  /** Auto-renewal ceiling of the host (host.json); 0 when the host does not renew locks. */
  readonly maxAutoLockRenewalMs?: number;
}

/** The parts of the redelivery window, each in milliseconds, and their sum. */
export interface RedeliveryWindow {
  /** Longest a message can wait in the queue before a delivery: its time to live. */
  readonly queueTtlMs: number;
  /** One delivery holding the message: a lock, plus the host's auto-renewal of it. */
  readonly deliveryHoldMs: number;
  /** All deliveries of one message: `maxDeliveryCount x deliveryHoldMs`. */
  readonly deliveriesMs: number;
  /** From dead-lettering until the last delivery of a copy an operator resubmits. */
  readonly resubmitMarginMs: number;
  /** `queueTtlMs + deliveriesMs + resubmitMarginMs`: how long a record must outlive its last write. */
  readonly totalMs: number;
}

/**
 * How long after a key's record was last written the broker (or an operator) can still hand
 * the same message to the consumer. A record kept at least this long never lets a redelivery
 * run the work twice.
 *
 * ```
 *  enqueue      1st delivery      ... delivery n (each <= one hold)     dead-lettered     resubmitted copy, last delivery
 *  |<------------- queue TTL ------------------>|<- n x hold ->|       |<------------- DLQ resubmit margin ------------>|
 *  |<------------------------------------------------ redelivery window ------------------------------------------>|
 * ```
 *
 * The record is written at or after the first delivery, so measuring from the enqueue time over-
 * covers. The sum is conservative (a locked message does not expire, so deliveries can run past
 * the TTL; their sum is minutes against days). See docs/lifecycle.md for the reasoning.
 */
export function redeliveryWindow(settings: RetentionSettings, options: RedeliveryWindowOptions = {}): RedeliveryWindow {
  const renewalMs = options.maxAutoLockRenewalMs ?? DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS;
  if (!Number.isFinite(renewalMs) || renewalMs < 0) throw new ConfigurationError(`maxAutoLockRenewalMs must be 0 or more, got ${renewalMs}`);
  const queueTtlMs = settings.SERVICEBUS_MESSAGE_TTL_SECONDS * SECOND_MS;
  const deliveryHoldMs = settings.SERVICEBUS_LOCK_DURATION_SECONDS * SECOND_MS + renewalMs;
  const deliveriesMs = settings.SERVICEBUS_MAX_DELIVERY_COUNT * deliveryHoldMs;
  const resubmitMarginMs = settings.DLQ_RESUBMIT_MARGIN_DAYS * DAY_MS;
  return { queueTtlMs, deliveryHoldMs, deliveriesMs, resubmitMarginMs, totalMs: queueTtlMs + deliveriesMs + resubmitMarginMs };
}

/** The configured retention of a record after its last write (IDEMPOTENCY_RETENTION_DAYS), in ms. */
export function retentionMsOf(settings: Pick<Settings, 'IDEMPOTENCY_RETENTION_DAYS'>): number {
  return Math.round(settings.IDEMPOTENCY_RETENTION_DAYS * DAY_MS);
}

/**
 * Refuses a retention shorter than the redelivery window: with it, a redelivered message would
 * find its key gone and run its work a second time. Call once at start (the function
 * registrations and the expiry timer do).
 *
 * @throws ConfigurationError naming the settings and the shortfall, e.g. with the defaults but
 *         `IDEMPOTENCY_RETENTION_DAYS=7`: "IDEMPOTENCY_RETENTION_DAYS (7 days) is shorter than ...".
 * @returns the window, for logging.
 */
export function assertRetentionCoversRedelivery(settings: RetentionSettings, options: RedeliveryWindowOptions = {}): RedeliveryWindow {
  const window = redeliveryWindow(settings, options);
  const retentionMs = retentionMsOf(settings);
  if (retentionMs < window.totalMs) {
    throw new ConfigurationError(
      `IDEMPOTENCY_RETENTION_DAYS (${settings.IDEMPOTENCY_RETENTION_DAYS} days) is shorter than the redelivery window of ` +
        `${days(window.totalMs)} days: SERVICEBUS_MESSAGE_TTL_SECONDS (${settings.SERVICEBUS_MESSAGE_TTL_SECONDS} s) + ` +
        `SERVICEBUS_MAX_DELIVERY_COUNT (${settings.SERVICEBUS_MAX_DELIVERY_COUNT}) x (SERVICEBUS_LOCK_DURATION_SECONDS ` +
        `(${settings.SERVICEBUS_LOCK_DURATION_SECONDS} s) + lock auto-renewal (${window.deliveryHoldMs / SECOND_MS - settings.SERVICEBUS_LOCK_DURATION_SECONDS} s)) + ` +
        `DLQ_RESUBMIT_MARGIN_DAYS (${settings.DLQ_RESUBMIT_MARGIN_DAYS} days); raise IDEMPOTENCY_RETENTION_DAYS to at least ` +
        `${Math.ceil((window.totalMs / DAY_MS) * 100) / 100} or shorten the others`,
    );
  }
  return window;
}

function days(ms: number): string {
  return (ms / DAY_MS).toFixed(2);
}
