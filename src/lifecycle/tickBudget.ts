/**
 * How the expiry timer's tick shares its budget (`EXPIRY_SWEEP_BUDGET_SECONDS`) between its parts, so that no part
 * starves another (issue 43: a sweep backlog used to leave the payments reconciler 0 s, tick after tick):
 * the sweep gets at most half; the reconciler at least a quarter, whatever the sweep used (the tick may then run over
 * its budget by up to a quarter: 60 s on the defaults, far inside the function timeout); the purge and the rewards
 * markers what is left.
 */
export const SWEEP_SHARE = 0.5;
export const RECONCILE_MIN_SHARE = 0.25;

/** The sweep's budget and the reconciler's, given the tick's whole budget and what is left of it when the reconciler starts. */
export function tickShares(totalMs: number): { sweepMs: number; reconcileMs: (leftMs: number) => number } {
  return {
    sweepMs: Math.floor(totalMs * SWEEP_SHARE),
    reconcileMs: (leftMs) => Math.max(leftMs, Math.floor(totalMs * RECONCILE_MIN_SHARE)),
  };
}
