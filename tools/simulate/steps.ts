import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';
import type { SimTaskHub } from './hub';
import type { Instance } from './hubTypes';
import type { Violation } from './invariantNames';
import type { SimProvider } from './provider';
import type { SimStore } from './store';
import type { SimTelemetry } from './telemetry';
import type { World } from './world';
import { chargesOf, identityOf, paymentOfRecord } from './identity';

/** What the judge reads of the simulated app (its parts, and the instance id of a record's lifetime). */
export interface StepView {
  readonly world: World;
  readonly store: SimStore;
  readonly hub: SimTaskHub;
  readonly provider: SimProvider;
  readonly telemetry: SimTelemetry;
  instanceIdOf(record: { recordId: string; createdAtMs: number; digest: string }): string;
}

/** One completion of a payment's record as it landed: the step the invariants judge. */
export interface Completion {
  readonly key: string;
  readonly atMs: number;
  readonly attempt: number;
  readonly result: ChargeResult;
  /** The record's payload digest: which of the bodies sent under the id it is about. */
  readonly digest: string;
}

/** The outcomes an operator is paged for (their metric has an alert rule in infra/). */
export const ALERTING_OUTCOMES = new Set(['failed', 'held', 'reconciled', 'lookup-unsupported', 'run-stuck', 'record-write-refused']);

/** How long after a `failed` completion its alert may come (the activity logs it at the write; a write whose answer was lost is alerted by the try that follows, after queue waits and late timers). */
const ALERT_WITHIN_MS = 24 * 60 * 60_000;

/**
 * The invariants judged at each step, when it happens (a record write that landed, a run that ended), not only at the
 * end: a completion that tells a charged customer "no", a `succeeded` that names another payment's charge, a takeover
 * of a suspended run, a run that ends under the record's attempt with the record still open. A record swept later, or
 * reopened by an operator, cannot hide them.
 */
export class StepJudge {
  readonly violations: Violation[] = [];
  readonly completions: Completion[] = [];
  /** The payments as the producer sent them under each id, first body first (a reused id has more: producer.ts). */
  readonly sent = new Map<string, PaymentRequested[]>();
  /** When the producer reused each id for another payment (its alerts before then are about an earlier payment). */
  readonly reusedAtMs = new Map<string, number[]>();
  private readonly seen = new Map<string, { status: string; attempt: number; etag: string }>();

  constructor(private readonly app: StepView) {}

  /** The producer sends another payment under an id already used (producer.ts, the scenarios). */
  reuse(paymentId: string, body: PaymentRequested, atMs: number): void {
    this.sent.get(paymentId)?.push(body);
    this.reusedAtMs.set(paymentId, [...(this.reusedAtMs.get(paymentId) ?? []), atMs]);
  }

  /** After a store write landed: each payment record that changed is judged. */
  afterWrite(): void {
    for (const record of this.app.store.inner.records()) {
      if (record.consumer !== PAYMENTS_CONSUMER) continue;
      const before = this.seen.get(record.key);
      if (before?.etag === record.etag) continue;
      this.seen.set(record.key, { status: record.status, attempt: record.attempt, etag: record.etag });
      if (before && record.attempt > before.attempt) this.judgeTakeover(record, before.attempt);
      if (record.status === RecordStatus.Completed && (before?.status !== RecordStatus.Completed || before.attempt !== record.attempt))
        this.judgeCompletion(record);
    }
  }

  /** A run reached a final status: one that completed under the record's attempt has written its record. */
  afterRun(instance: Instance): void {
    if (instance.status !== 'Completed') return;
    const attempt = (instance.input as { attempt?: number } | undefined)?.attempt;
    const record = this.app.store.inner.records().find((r) => r.consumer === PAYMENTS_CONSUMER && this.app.instanceIdOf(r) === instance.id);
    if (record?.status === RecordStatus.InProgress && record.attempt === attempt)
      this.violations.push({
        invariant: 'run-writes-its-record',
        detail: `${record.key}: its run completed as attempt ${attempt} (output ${JSON.stringify(instance.output)?.slice(0, 80)}) and the record is still in progress under that attempt`,
      });
  }

  private judgeTakeover(record: IdempotencyRecord, previousAttempt: number): void {
    const run = this.app.hub.instances.get(this.app.instanceIdOf(record));
    if (run?.status === 'Suspended')
      this.violations.push({
        invariant: 'no-takeover-of-suspended',
        detail: `${record.key}: attempt ${previousAttempt} -> ${record.attempt} while its run is suspended (the operator's: resume or terminate it first)`,
      });
  }

  private judgeCompletion(record: IdempotencyRecord): void {
    const result = record.result as ChargeResult;
    const now = this.app.world.nowMs();
    this.completions.push({ key: record.key, atMs: now, attempt: record.attempt, result, digest: record.digest });
    const payment = paymentOfRecord(this.sent, record);
    // This payment's charges under its key (a producer's reuse of the id for another payment is another payment).
    const charged = chargesOf(this.app.provider.ledger, record.key, payment).filter((c) => c.atMs <= now);
    const refused = result.status === 'rejected' || result.status === 'declined' || (result.status === 'failed' && result.code !== 'held-for-operator');
    // A first attempt held by its run's first provider execution: no earlier call of it could have charged (the entity's
    // begin answered uncertain for nothing: a re-sent begin, issue 51 item 5), so the page is a false alarm.
    const firstRun = this.app.hub.activityRuns.filter((r) => r.name === 'chargeProvider' && r.instanceId === this.app.instanceIdOf(record));
    if (result.status === 'failed' && result.code === 'held-for-operator' && record.attempt === 1 && firstRun.length <= 1)
      this.violations.push({
        invariant: 'no-false-alarm',
        detail: `${record.key} held at attempt 1 by its run's first provider execution: no earlier call could have charged`,
      });
    if (refused && charged.length > 0)
      this.violations.push({
        invariant: 'charged-not-refused',
        detail: `${record.key} recorded ${result.status} (${'reason' in result ? String(result.reason).slice(0, 80) : ''}) while the provider holds its charge ${charged[0].chargeId}`,
      });
    if (result.status === 'succeeded') {
      const charge = this.app.provider.ledger.find((c) => c.chargeId === result.chargeId);
      if (!charge || charge.key !== record.key || !payment || identityOf(charge) !== identityOf(payment))
        this.violations.push({
          invariant: 'succeeded-is-own-charge',
          detail: `${record.key} recorded succeeded with ${result.chargeId}, which is ${charge ? `${charge.paymentId}'s charge for ${charge.customerId} of ${charge.amount} ${charge.currency} under key ${charge.key}` : 'no charge the provider made'}`,
        });
    }
  }

  /** Each `failed` completion named by an alert (an error log with an alerting outcome and its key) within the bound. */
  unalertedFailures(nowMs: number): Violation[] {
    const violations: Violation[] = [];
    for (const [index, completion] of this.completions.entries()) {
      if (completion.result.status !== 'failed' || nowMs < completion.atMs + ALERT_WITHIN_MS) continue;
      const previous = this.completions
        .slice(0, index)
        .filter((c) => c.key === completion.key && c.result.status === 'failed')
        .at(-1);
      const alerted = this.app.telemetry.logs.some(
        (l) =>
          l.level === 'ERROR' &&
          l.attributes.idempotencyKey === completion.key &&
          ALERTING_OUTCOMES.has(String(l.attributes.outcome)) &&
          l.atMs > (previous?.atMs ?? Number.NEGATIVE_INFINITY) &&
          l.atMs <= completion.atMs + ALERT_WITHIN_MS,
      );
      if (!alerted)
        violations.push({
          invariant: 'failure-alerted',
          detail: `${completion.key} recorded failed as attempt ${completion.attempt} (${completion.result.reason.slice(0, 100)}) and no alert names it`,
        });
    }
    return violations;
  }
}
