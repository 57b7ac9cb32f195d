import type { Signal } from './telemetry';

/** A log line as the simulator's telemetry keeps it. */
type Line = Signal & { readonly body: string };

/**
 * The reconciler's reopens of a payment that reopened an attempt already alerted failed or held (`failed-stays-failed`):
 * a `reconciled` line whose `previousAttempt` is at or after an alert's attempt, the alert logged no later than it. The
 * reconciler logs after its restart, and the restarted run may hold and alert at once: that alert is of the new attempt,
 * not one the reconciler reopened. An alert without an attempt is judged by time alone. An alert logged before the
 * producer reused the id for another payment (`reusedAtMs`) is about the earlier payment, whose record had expired: a
 * reopen after the reuse is of the new payment's record (simulator seed 13436).
 */
export function reopenedAfterAlert(logs: readonly Line[], key: string, reusedAtMs: readonly number[] = []): Line[] {
  const ofKey = logs.filter((l) => l.attributes.idempotencyKey === key);
  const alerts = ofKey.filter((l) => l.attributes.outcome === 'failed' || l.attributes.outcome === 'held');
  const lastReuseBy = (atMs: number) => Math.max(Number.NEGATIVE_INFINITY, ...reusedAtMs.filter((r) => r <= atMs));
  const reopensAlerted = (reopen: Line) =>
    alerts.some(
      (a) =>
        a.atMs <= reopen.atMs &&
        a.atMs >= lastReuseBy(reopen.atMs) &&
        (typeof a.attributes.attempt !== 'number' || a.attributes.attempt <= Number(reopen.attributes.previousAttempt)),
    );
  return ofKey.filter((l) => l.attributes.outcome === 'reconciled' && reopensAlerted(l));
}
