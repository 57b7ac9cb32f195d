import type { ChaosReport } from './chaosReport';
import { statusesOf } from './unfinishedRuns';

/**
 * The run's verdict, and the rule that keeps a broken environment from passing (docs/demo.md, "Uncharged
 * dead-letters"): the share of chargeable payments that end uncharged in the DLQ may not exceed the share of
 * deliveries that met an injected fault; with no fault injected, any uncharged dead-letter fails the run.
 */

/** The figures the rule reads, from a report. */
export interface UnchargedDeadLetters {
  readonly chargeable: number;
  readonly uncharged: number;
  readonly injectedFaults: number;
  readonly deliveries: number;
  /** Last errors of the payments dead-letters, most frequent first, with their counts. */
  readonly lastErrors: ReadonlyArray<readonly [string, number]>;
}

/** A dead-letter's last error that says the store did not answer (StoreUnavailableError). */
const STORE_OUTAGE_ERROR = /StoreUnavailable|store (is )?unavailable|did not answer/i;

/** Payments messages dead-lettered with the store unavailable: with outages injected, the app's failure to ride them out. */
export function outageDeadLetters(r: ChaosReport): number {
  return r.deadLetteredMessages.filter((d) => d.queue === 'payments' && STORE_OUTAGE_ERROR.test(d.lastError)).length;
}

export function unchargedDeadLetters(r: ChaosReport): UnchargedDeadLetters {
  const details = r.parts.find((p) => p.name === 'payments')?.details ?? {};
  // Those the injected outages dead-lettered are judged as the app's (outageViolation), not as a broken environment.
  const byOutage = r.storageOutages > 0 ? outageDeadLetters(r) : 0;
  const errors = new Map<string, number>();
  for (const d of r.deadLetteredMessages) {
    if (d.queue !== 'payments') continue;
    const text = d.lastError.replace(/\b(pay|ord)-[\w-]+/g, '<id>').slice(0, 160);
    errors.set(text, (errors.get(text) ?? 0) + 1);
  }
  const providerFaults = Object.values(r.providerFaults).reduce((s, n) => s + n, 0);
  return {
    chargeable: Number(details.chargeable ?? 0),
    uncharged: Math.max(0, Number(details.chargeableAwaitingOperator ?? 0) - byOutage),
    injectedFaults: r.crashesInjected + r.slowHandlers + providerFaults,
    deliveries: r.deliveries,
    lastErrors: [...errors.entries()].sort((a, b) => b[1] - a[1]),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/**
 * The environment rule (see the file's comment).
 * @returns the violation in words, or undefined when the uncharged dead-letters are within what the faults explain.
 */
export function environmentViolation(f: UnchargedDeadLetters): string | undefined {
  if (f.uncharged === 0 || f.chargeable === 0) return undefined;
  const share = f.uncharged / f.chargeable;
  const faultShare = f.deliveries === 0 ? 0 : f.injectedFaults / f.deliveries;
  if (share <= faultShare) return undefined;
  const errors = f.lastErrors
    .slice(0, 3)
    .map(([e, n]) => `${n} x "${e}"`)
    .join(', ');
  return (
    `the environment is broken (provider or storage), the run proves nothing: ${f.uncharged} of ${f.chargeable} chargeable payments ` +
    `(${pct(share)}) ended uncharged in the dead-letter queue, more than the injected faults explain (${pct(faultShare)} of deliveries met one)` +
    (errors ? `; last errors: ${errors}` : '')
  );
}

/**
 * Every payment ends charged (declined, rejected) or `failed` with a reason: a delivery acknowledged with the charge
 * handed off (handoff design) whose record never got a result is a payment nobody finishes.
 * @returns the violation in words, or undefined.
 */
export function outcomeViolation(r: ChaosReport): string | undefined {
  const n = Number(r.parts.find((p) => p.name === 'payments')?.details.acknowledgedWithoutOutcome ?? 0);
  return n > 0 ? `${n} payment(s) were acknowledged (handed off) but their record has neither a charge nor a failure with its reason` : undefined;
}

/**
 * A storage outage the run injected must be ridden out (src/messaging/storeOutage.ts): a payments message dead-lettered
 * with the store unavailable is the app's failure, not the environment's.
 * @returns the violation in words, or undefined.
 */
export function outageViolation(r: ChaosReport): string | undefined {
  const n = r.storageOutages > 0 ? outageDeadLetters(r) : 0;
  return n > 0
    ? `${n} payments message(s) dead-lettered by the injected storage outage(s) (last error: the store did not answer): the deliveries did not ride it out`
    : undefined;
}

/** The report with the environment and outcome rules applied: `ok` false and the reasons first among the violations when one breaks. */
export function judge(r: ChaosReport): ChaosReport {
  const violations = [outageViolation(r), environmentViolation(unchargedDeadLetters(r)), outcomeViolation(r)].filter((v): v is string => v !== undefined);
  if (violations.length === 0) return r;
  return { ...r, ok: false, violations: [...violations, ...r.violations] };
}

/**
 * The one-line verdict printed first: `2,000 messages: 0 lost, 0 double charges: PASS`. Payments whose run was still
 * going at verification are named apart from lost, with their runs' statuses:
 * `2,000 messages: 0 lost, 3 unfinished at verification (3 Running), 0 double charges: FAIL - ...`.
 */
export function verdictLine(r: ChaosReport): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const rewards = r.parts.find((p) => p.name === 'rewards')?.details; // Event Hubs: balances = distinct events' points
  const rewardsText = rewards ? `, ${n(Number(rewards.balancesMatching))}/${n(Number(rewards.customers))} reward balances right` : '';
  const unfinished = r.unfinished ?? 0;
  const unfinishedText = unfinished > 0 ? `, ${n(unfinished)} unfinished at verification (${statusesOf(r.unfinishedMessages ?? [])})` : '';
  const head = `${n(r.messages)} messages: ${n(r.lost)} lost${unfinishedText}, ${n(r.doubleCharged)} double charge${r.doubleCharged === 1 ? '' : 's'}${rewardsText}`;
  if (r.ok) return `${head}: PASS`;
  const first = r.violations[0] ?? 'an invariant failed';
  const more = r.violations.length > 1 ? ` (+${r.violations.length - 1} more below)` : '';
  return `${head}: FAIL - ${first.length > 200 ? `${first.slice(0, 200)}...` : first}${more}`;
}
