import { payloadDigest, RecordStatus } from 'azure-functions-idempotency';
import { MAX_PROVIDER_ROUNDS } from '../../src/config/callTiming';
import { chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { SETTLE_TRIES } from '../../src/payments/handOffPlan';
import { RECORD_WRITE_ROUNDS_PER_EXECUTION } from '../../src/payments/recordWriteRetry';
import type { ChargeResult } from '../../src/payments/schema';
import type { SimApp } from './app';
import { ALERTING_OUTCOMES } from './steps';
import { chargedAfterAlert } from './chargedAfterAlert';
import { chargesOf, identityOf } from './identity';
import { reopenedAfterAlert } from './reopenedAfterAlert';

export { INVARIANTS, type InvariantName, type Violation } from './invariantNames';
import type { Violation } from './invariantNames';

/**
 * The most tasks one execution may hold, from the app's own caps: its provider rounds (at most `MAX_PROVIDER_ROUNDS`
 * within the budget: settings that give more are refused at start), an activity and a timer each; the settle's tries
 * (a call and a timer each, and its first wait); the entity's call; and the record write's tries before it continues
 * as new (two tasks each); with room for late timers.
 */
const HISTORY_BOUND_TASKS = 2 * MAX_PROVIDER_ROUNDS + 2 * SETTLE_TRIES + 1 + 2 + 2 * RECORD_WRITE_ROUNDS_PER_EXECUTION + 10;

/** Every moment each payment id's failure was alerted (`payments.failed` / `payments.held`, with its key), in order. */
function failureAlerts(app: SimApp): Map<string, number[]> {
  const alerts = new Map<string, number[]>();
  for (const line of app.telemetry.logs) {
    const key = line.attributes.idempotencyKey;
    if (typeof key === 'string' && (line.attributes.outcome === 'failed' || line.attributes.outcome === 'held'))
      alerts.set(key, [...(alerts.get(key) ?? []), line.atMs]);
  }
  return alerts;
}

/** Checked continuously (each tick) and at the end: returns every violation found. */
export function checkInvariants(app: SimApp, payments: readonly string[], end: { final: boolean; boundMs: number; nowMs: number }): Violation[] {
  const violations: Violation[] = [];
  const memoryMs = app.provider.keyMemoryMs;
  for (const paymentId of payments) {
    // One payment is one body under the id (a producer's reuse of the id for another payment is another payment).
    for (const payment of app.steps.sent.get(paymentId) ?? []) {
      const charges = chargesOf(app.provider.ledger, paymentId, payment);
      if (charges.length > 1)
        violations.push({
          invariant: 'at-most-one-charge',
          detail: `${paymentId} (${identityOf(payment)}) charged ${charges.length} times (${charges.map((c) => c.chargeId).join(', ')})`,
        });
    }
  }
  for (const call of app.provider.calls) {
    // A producer's reuse of the id for another payment is a new payment's first call: the key's age is not its own.
    if (call.kind !== 'charge' || call.lookedUp || call.keyFirstSeenMs === undefined || call.reusedKey) continue;
    const ageMs = call.atMs - call.keyFirstSeenMs;
    const releasedMs = app.released.get(call.key.split('#')[0]);
    if (ageMs > memoryMs && !(releasedMs !== undefined && releasedMs <= call.atMs))
      violations.push({
        invariant: 'no-call-past-key-memory',
        detail: `${call.key} sent at key age ${(ageMs / 3_600_000).toFixed(2)} h > memory ${memoryMs / 3_600_000} h, no look-up`,
      });
  }
  const alerted = failureAlerts(app);
  for (const [key, alertTimes] of alerted) {
    // An operator's retry reopens a failed payment on purpose: a charge after it is the operator's decision.
    const releasedMs = app.retried.get(key);
    // The payments under the id that ended failed (a producer's reuse of the id for another payment is not one of them).
    const failedBodies = new Set(app.steps.completions.filter((c) => c.key === key && c.result.status === 'failed').map((c) => c.digest));
    const sent = app.steps.sent.get(key) ?? [];
    const ofFailed = new Set(sent.filter((b) => failedBodies.size === 0 || failedBodies.has(payloadDigest(b))).map(identityOf));
    for (const { charge, alertMs } of chargedAfterAlert(key, alertTimes, app.provider.ledger, ofFailed, sent[0] && identityOf(sent[0]))) {
      if (releasedMs === undefined || releasedMs > charge.atMs)
        violations.push({
          invariant: 'failed-stays-failed',
          detail: `${key} charged (${charge.chargeId}) ${((charge.atMs - alertMs) / 60_000).toFixed(1)} min after its failure was alerted, not released`,
        });
    }
    for (const line of reopenedAfterAlert(app.telemetry.logs, key, app.steps.reusedAtMs.get(key))) {
      if (releasedMs === undefined || releasedMs > line.atMs)
        violations.push({
          invariant: 'failed-stays-failed',
          detail: `${key} reopened by the reconciler after its failure was alerted: ${line.body.slice(0, 100)}`,
        });
    }
  }
  violations.push(...falseAlarms(app), ...app.steps.violations, ...app.steps.unalertedFailures(end.nowMs));
  if (app.hub.longestHistory.tasks > HISTORY_BOUND_TASKS)
    violations.push({
      invariant: 'history-bounded',
      detail: `${app.hub.longestHistory.instanceId.slice(0, 24)} held ${app.hub.longestHistory.tasks} tasks in one execution's history`,
    });
  for (const detail of [...app.sweptWhileLive, ...app.purgedWhileLive]) violations.push({ invariant: 'no-delete-while-live', detail });
  for (const call of app.provider.calls) {
    if (call.answered !== 'declined') continue;
    const result = app.completedOnce.get(call.key) as ChargeResult | undefined;
    // Held too: the run had the provider's decline to go by (a hold is for what only the provider can say).
    if (result?.status === 'failed' && !declineUnreachable(app, call))
      violations.push({
        invariant: 'result-matches-provider',
        detail: `${call.key}: the provider declined, the record says failed (${result.reason.slice(0, 80)})`,
      });
  }
  if (end.final)
    violations.push(...settled(app, payments), ...refusedButCharged(app, payments), ...hubBounded(app, end.nowMs, end.boundMs), ...runsFinish(app));
  return dedupe(violations);
}

/**
 * Pages (an error log with an alerting outcome) for a record whose attempt was the input of a start the task hub
 * accepted and dropped: the run that went on was the older attempt's and was fenced; nothing failed, nothing to do.
 */
function falseAlarms(app: SimApp): Violation[] {
  const dropped = new Set(app.hub.droppedStarts.map((d) => `${d.instanceId}|${String(d.attempt)}`));
  return app.telemetry.logs
    .filter((l) => l.level === 'ERROR' && l.attributes.outcome === 'reconciled')
    .filter((l) => dropped.has(`${String(l.attributes.instanceId)}|${String(l.attributes.previousAttempt)}`))
    .map((l) => ({
      invariant: 'no-false-alarm' as const,
      detail: `${String(l.attributes.idempotencyKey)} paged as ${String(l.attributes.reason)}: attempt ${String(l.attributes.previousAttempt)}'s start was dropped as a duplicate, the older attempt's run was fenced (routine, nothing for an operator)`,
    }));
}

/**
 * The accepted trade of the fence (money before classification; issue 51: a condition, never failing open): a decline
 * whose answer never reached the run (the last one the provider gave), after which every round the run made either
 * failed at the provider or was refused by the fence because the store could not take the call's mark (it cannot tell
 * a fresh call from a stale copy). The run then records `failed` (alerted; an operator's retry gets the decline). A
 * round the provider answered is not excused.
 */
function declineUnreachable(app: SimApp, call: { key: string }): boolean {
  // The last decline: had an earlier one reached the run, the run would have recorded it (and stopped calling).
  const decline = app.provider.calls.filter((c) => c.key === call.key && c.answered === 'declined').at(-1)!;
  const calls = app.provider.calls.filter((c) => c.kind === 'charge' && c.key === decline.key && c.atMs > decline.atMs);
  const refusals = app.fenceRefusals.filter((r) => r.key === decline.key && r.atMs > decline.atMs);
  return calls.length + refusals.length > 0 && calls.every((c) => c.answered === undefined);
}

/**
 * At the end, `charged-not-refused` again: a completion that said rejected, declined or failed (not held) while a call
 * of its key was in flight at the provider: made before the completion, the charge landed after it (a charge in flight
 * when a 409 was read as a refusal: `--mutate conflict-rejected`). The step check sees only charges already made.
 */
function refusedButCharged(app: SimApp, payments: readonly string[]): Violation[] {
  const violations: Violation[] = [];
  for (const completion of app.steps.completions.filter((c) => payments.includes(c.key))) {
    const result = completion.result;
    const refused = result.status === 'rejected' || result.status === 'declined' || (result.status === 'failed' && result.code !== 'held-for-operator');
    const payment = (app.steps.sent.get(completion.key) ?? []).find((b) => payloadDigest(b) === completion.digest);
    const charge = chargesOf(app.provider.ledger, completion.key, payment).find((c) => c.calledAtMs <= completion.atMs && c.atMs > completion.atMs);
    if (refused && charge)
      violations.push({
        invariant: 'charged-not-refused',
        detail: `${completion.key} recorded ${result.status} while its call was in flight at the provider: charge ${charge.chargeId} landed after`,
      });
  }
  return violations;
}

/** At the end: each payment's record completed (a failure alerted), or its message dead-lettered (alerted), or an alert names it. */
function settled(app: SimApp, payments: readonly string[]): Violation[] {
  const violations: Violation[] = [];
  const dead = app.bus.deadLettered();
  for (const paymentId of payments) {
    const record = app.record(paymentId);
    const result = record?.result as ChargeResult | undefined;
    const alertedNow = app.telemetry.logs.some(
      (l) => l.attributes.idempotencyKey === paymentId && l.level === 'ERROR' && ALERTING_OUTCOMES.has(String(l.attributes.outcome)),
    );
    if (dead.has(paymentId)) continue; // the dead-letter queue's alert names it
    if (record?.status === RecordStatus.Completed && (result?.status !== 'failed' || alertedNow)) continue;
    const last = app.steps.completions.filter((c) => c.key === paymentId).at(-1);
    // Completed, then swept past retention: a failure among its completions is judged by failure-alerted.
    if (!record && last) continue;
    if (alertedNow && record?.status !== RecordStatus.Completed) continue;
    violations.push({
      invariant: 'every-payment-settles',
      detail: `${paymentId}: record ${record ? `${record.status}${result ? ` (${result.status})` : ''} attempt ${record.attempt}` : 'none'}, run ${runOf(app, paymentId)}, no alert names it`,
    });
  }
  return violations;
}

function runOf(app: SimApp, paymentId: string): string {
  const instanceId = app.instanceOf(paymentId);
  return (instanceId && app.hub.instances.get(instanceId)?.status) ?? 'none';
}

/** At the end: no final run older than retention + the bound whose record is gone is still in the task hub. */
function hubBounded(app: SimApp, nowMs: number, boundMs: number): Violation[] {
  const records = new Set(app.store.inner.records().map((r) => app.instanceIdOf(r)));
  const cutoffMs = nowMs - app.retentionMs - boundMs;
  const stale = [...app.hub.instances.values()].filter(
    (i) => ['Completed', 'Failed', 'Terminated'].includes(i.status) && !records.has(i.id) && i.createdMs < cutoffMs,
  );
  // Entities too, by the id the purge must build for them: an entity left after its record and run are gone is kept forever.
  const staleEntities = [...app.hub.entities.entries()].filter(
    ([key, entity]) => !records.has(chargeInstanceId(key)) && !app.hub.instances.has(chargeInstanceId(key)) && (entity.lastOpMs ?? 0) < cutoffMs,
  );
  return stale.length + staleEntities.length === 0
    ? []
    : [
        {
          invariant: 'hub-bounded',
          detail: `${stale.length} final run(s) and ${staleEntities.length} entit(ies) without a record kept past retention + ${boundMs / 3_600_000} h (of ${app.hub.instances.size} instances, ${app.hub.entities.size} entities)`,
        },
      ];
}

/** At the end: a run still Running or Pending (not suspended by an operator) has hung: nothing will finish it. */
function runsFinish(app: SimApp): Violation[] {
  return [...app.hub.instances.values()]
    .filter((i) => i.status === 'Running' || i.status === 'Pending')
    .map((i) => ({ invariant: 'runs-finish' as const, detail: `${i.id.slice(0, 24)} still ${i.status} at the end (${i.results.length} task(s) answered)` }));
}

function dedupe(violations: Violation[]): Violation[] {
  const seen = new Set<string>();
  return violations.filter((v) => (seen.has(`${v.invariant}|${v.detail}`) ? false : (seen.add(`${v.invariant}|${v.detail}`), true)));
}
