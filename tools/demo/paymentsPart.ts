import { payloadDigest } from 'azure-functions-idempotency/internal';
import type { ProviderLookup } from '../../src/payments/providerLookup';
import { StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { RecordStatus } from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from '../../src/lifecycle/ExpirySweeper';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import { chargeEntityKey } from '../../src/payments/ChargeWorkflow';
import type { ChargeResult } from '../../src/payments/schema';
import type { QueueMessage } from '../local/LocalQueue';
import { startPaymentsRig, type PaymentsRig } from '../local/paymentsRig';
import { CrashPoint } from './faults';
import type { Ledger, SendTag } from './ledger';
import { emptyPartSweep, sendsOf, type ChaosEnvironment, type ChaosPart, type PartReport, type PartSweepReport, type PartTimePhase } from './part';
import { buildPaymentsWorkload, type LogicalMessage } from './paymentsWorkload';
import type { ProviderHandle } from './providerLedger';
import { loadSettings } from '../../src/config/settings';
import type { RetryBudget } from '../../src/payments/chargeOrchestration';
import type { PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import { handedOffInstances, resolveHandOffs, type EntityOutcomes, type FinalResults } from './paymentsHandOff';

export interface PaymentsPartOptions {
  readonly messages: number;
  readonly duplicateRate: number;
  readonly provider: ProviderHandle;
  /** Lease of a claim; a delivery waits at most 80 % of it. */
  readonly leaseMs: number;
  readonly providerTimeoutMs: number;
  /** The time phase (docs/demo.md): payments held for an operator, a jump past retention, the sweep, DLQ resubmission, reused keys after expiry. */
  readonly timePhase?: boolean;
  /** Retention of the dedup records (default 30 days): the time phase jumps past it. */
  readonly retentionMs?: number;
  /** At most this many Durable host kills after a charge (each costs a restart and the queues' 1 min visibility timeout). */
  readonly maxHostKills?: number;
  /** `PAYMENTS_DESIGN` (default: the environment's `PAYMENTS_DESIGN`, else `handoff`). */
  readonly design?: PaymentsDesign;
  /** `PAYMENT_PROVIDER_LOOKUP` and `PAYMENT_PROVIDER_KEY_MEMORY_HOURS` (default the settings': `none`, 24). */
  readonly providerLookup?: ProviderLookup;
  readonly providerKeyMemoryHours?: number;
}

/** The demo's handoff retry budget: 10 min of durable-timer retries (1 s doubling to 10 s) before a payment ends `failed`. */
const DEMO_RETRY: RetryBudget = { budgetMs: 600_000, firstDelayMs: 1_000, maxDelayMs: 10_000 };

/** A delivery of a payment held for an operator, before the operator's fix (the time phase's jump). */
export class HeldForOperatorError extends Error {
  constructor(paymentId: string, what: string) {
    super(`payment ${paymentId} is held for an operator: ${what}`);
    this.name = 'HeldForOperatorError';
  }
}

const PART = 'payments';

/** How a charge orchestration fails by design: the provider's transient failures outlasted the retries, or its attempt was stale. */
const EXPECTED_CHARGE_FAILURE = /payment provider|is stale: attempt/;

/**
 * The payments consumer in the chaos run: the real handler (through the rig) with crashes
 * injected before and after the claim, after the provider charged (Durable host crash, replayed)
 * and before the claim is completed; its seeded workload; and its invariants:
 *
 * - every valid, non-declined payment whose message was completed is charged exactly once, with
 *   its own amount; one that is only in the dead-letter queue is charged at most once (an
 *   operator's resubmit completes it without charging again): so
 *   `effectiveCharges == chargeable - chargeableAwaitingOperator` (uncharged and dead-lettered);
 * - declines, malformed messages and reused keys are never charged; no payment is charged twice;
 * - every malformed message is parked with its reason, every reused-key message with `key-reused`;
 * - nothing is lost: each logical message is completed with its expected outcome, or dead-lettered,
 *   or (broker duplicate detection on) dropped by the broker as a resend of a known MessageId.
 *   A reused-key message is sent once its original is completed; if the original is dead-lettered
 *   instead, it is withheld (reported), since the consumer would rightly see it as the key's first use.
 */
export async function startPaymentsPart(env: ChaosEnvironment, options: PaymentsPartOptions): Promise<ChaosPart> {
  // An external provider is long-lived and has its own decline rules: give this run's paymentIds a
  // tag of their own and send no `decline*` customers (only the demo's fake provider declines those).
  const external = options.provider.fake === undefined;
  const workload = buildPaymentsWorkload({
    messages: options.messages,
    duplicateRate: options.duplicateRate,
    seed: env.seed,
    timePhase: options.timePhase ?? false,
    ...(external ? { declineShare: 0, runTag: Date.now().toString(36) } : {}),
  });
  const retentionMs = options.retentionMs ?? 30 * 86_400_000;
  const hostKills = { count: 0 };
  const design =
    options.design ??
    loadSettings({ PAYMENTS_DESIGN: process.env.PAYMENTS_DESIGN, IDEMPOTENCY_TABLE_CONNECTION_STRING: env.tableConnectionString }).PAYMENTS_DESIGN;
  const rig = await startPaymentsRig({
    tableConnectionString: env.tableConnectionString,
    durableTableConnectionString: env.directTableConnectionString,
    providerUrl: options.provider.url,
    providerTimeoutMs: options.providerTimeoutMs,
    leaseMs: options.leaseMs,
    retentionMs,
    clock: env.clock,
    design,
    providerLookup: options.providerLookup,
    providerKeyMemoryHours: options.providerKeyMemoryHours,
    retry: DEMO_RETRY,
    restartDelayMs: 100,
    // The functions as registered, invoked as the host does, the charge run by the real Durable engine (the Durable
    // Task extension and its Azure Storage provider); host crashes are SIGKILLs of the host after the provider
    // charged (the engine runs the activity again after the restart), a bounded number per run.
    durable: 'real',
    killHostAfterCharge: (paymentId) =>
      hostKills.count < (options.maxHostKills ?? 2) && env.faults.shouldCrash(CrashPoint.AfterCharge, `${paymentId}#host`) && ++hostKills.count > 0,
  });
  const held = new HeldPayments(workload.messages);
  injectStoreCrashes(rig, env, held);
  /** Handoff: the records' results read before the time phase's sweep (a record swept since still answered its deliveries). */
  const resultsBeforeSweep: FinalResults = new Map();
  const deliver = async (body: unknown, meta: Parameters<typeof rig.deliver>[1]): Promise<PaymentDeliveryResult> => {
    const result = await rig.deliver(body, meta);
    if (result.outcome === 'handedOff') {
      // Handoff's own crash points after the start: a held payment fails before its ack (the run charged it), and
      // the consumer may die before the ack (the redelivery finds the orchestration started).
      const paymentId = String(meta.messageId);
      held.afterHandOff(paymentId);
      env.faults.maybeCrash(CrashPoint.BeforeComplete, paymentId);
    }
    return result;
  };

  const send = (message: LogicalMessage, copy: number): QueueMessage<SendTag> => ({
    messageId: message.messageId,
    body: message.body,
    correlationId: `chaos-${env.seed}`,
    tag: { part: PART, index: message.index, copy },
  });
  const copiesOf = (m: LogicalMessage) => Array.from({ length: 1 + m.extraCopies }, (_, copy) => send(m, copy));
  const waiting = new Map<number, LogicalMessage[]>();
  const withheld = new Set<number>();
  for (const message of workload.messages) {
    if (message.kind !== 'reusedKey') continue;
    waiting.set(message.reusesIndex!, [...(waiting.get(message.reusesIndex!) ?? []), message]);
  }
  const phase: PaymentsPhaseState = { ran: false, withheldReuses: new Set() };

  const timePhase: PartTimePhase | undefined = options.timePhase
    ? {
        expiresWithinMs: retentionMs + options.leaseMs,
        ready: (ledger) => held.all.every((m) => ledger.fate(PART, m.index).deadLettered.length > 0),
        fix: () => {
          held.fixed = true;
          phase.ran = true;
        },
        beforeJump: async () => {
          // Handoff: the runs own the records; let them finish, and note what they recorded, before the jump.
          await rig.workflow.drain();
          await readResults(rig, workload.messages, resultsBeforeSweep);
        },
        sweep: (holds) => sweepToTheEnd(new ExpirySweeper(rig.store.client, { budgetMs: 60_000, clock: env.clock, holds, holdMs: retentionMs })),
        sendsAfterSweep(ledger) {
          // A reuse is sent only when every copy of its original completed before the jump (so no
          // copy of the original can meet the reuse's record); otherwise it is withheld (reported).
          const out: QueueMessage<SendTag>[] = [];
          for (const m of workload.messages.filter((x) => x.kind === 'reusedAfterExpiry')) {
            const original = workload.messages[m.reusesIndex!];
            const fate = ledger.fate(PART, original.index);
            const settledBefore =
              fate.copiesSent === 1 + original.extraCopies &&
              fate.completions.length === fate.copiesSent &&
              fate.completionEpochs.every((e) => e === 0) &&
              fate.deadLettered.length === 0 &&
              fate.resubmitted === 0;
            if (settledBefore) out.push(...copiesOf(m));
            else {
              withheld.add(m.index);
              phase.withheldReuses.add(m.index);
            }
          }
          return out;
        },
      }
    : undefined;

  return {
    consumer: { name: PART, queue: PART, deliver },
    initialSends: workload.sends.map((s) => send(workload.messages[s.index], s.copy)),
    plannedSends: sendsOf(workload.messages),
    sendsAfterSettled(index, settled) {
      const released = waiting.get(index) ?? [];
      waiting.delete(index);
      if (settled === 'deadLettered') {
        // The key's first use was never processed: its "reuse" would be the key's first use. Not sent.
        for (const m of released) withheld.add(m.index);
        return [];
      }
      return released.flatMap(copiesOf);
    },
    withheldSends: () => sendsOf([...withheld].map((i) => workload.messages[i])),
    // Handoff: the bus is idle while runs still wait on a retry timer or a crash restart; let them finish first
    // (stop() alone would drop their pending timers and leave them unfinished).
    drain: async () => {
      await rig.workflow.drain();
      await rig.workflow.stop();
    },
    close: async () => rig.close?.(),
    verify: async (ledger) => {
      const current: FinalResults = new Map();
      await readResults(rig, workload.messages, current);
      // Outcomes the lifetimes' entities hold, for acknowledgements whose record the time phase's jump swept mid-run.
      const entities: EntityOutcomes = new Map();
      await forEachLimit(handedOffInstances(ledger, PART, workload.messages), 8, async (instanceId) => {
        const state = await rig.workflow.entityState(instanceId.replace(/^payment-/, '')).catch(() => undefined);
        if (state?.status === 'completed') entities.set(instanceId, state.result);
        else if (state?.status === 'failed') entities.set(instanceId, { status: 'failed', reason: state.reason });
      });
      const fromEntity = new Set<number>();
      const resolved = resolveHandOffs(ledger, PART, workload.messages, resultsBeforeSweep, current, entities, fromEntity);
      const report = await verifyPayments(
        rig,
        workload.messages,
        resolved,
        options.provider,
        withheld,
        options.timePhase ? { ...phase, held } : undefined,
        design,
      );
      return { ...report, details: { ...report.details, outcomesFromEntityAfterSweep: fromEntity.size } };
    },
    ...(timePhase ? { timePhase } : {}),
  };
}

/** The time phase as the payments part saw it. */
interface PaymentsPhaseState {
  ran: boolean;
  readonly withheldReuses: Set<number>;
}

/**
 * Payments held for an operator (time phase): before the fix, a `beforeCharge` one fails every
 * delivery before its claim; an `afterCharge` one is claimed and charged once, then fails to
 * complete, and fails before the claim on every later delivery. Both end in the DLQ.
 */
class HeldPayments {
  fixed = false;
  readonly all: readonly LogicalMessage[];
  private readonly byId = new Map<string, LogicalMessage>();
  /** paymentIds of `afterCharge` payments whose first claim went as far as completing (charged). */
  readonly reachedComplete = new Set<string>();

  constructor(messages: readonly LogicalMessage[]) {
    this.all = messages.filter((m) => m.heldForOperator !== undefined);
    for (const m of this.all) this.byId.set(m.messageId!, m);
  }

  beforeClaim(paymentId: string): void {
    const m = this.fixed ? undefined : this.byId.get(paymentId);
    if (!m) return;
    if (m.heldForOperator === 'beforeCharge') throw new HeldForOperatorError(paymentId, 'every delivery fails before its claim until the fix');
    if (this.reachedComplete.has(paymentId)) throw new HeldForOperatorError(paymentId, 'charged once; every later delivery fails until the fix');
  }

  /** Handoff: the run charges and completes the record; the delivery fails before its ack until the fix. */
  afterHandOff(paymentId: string): void {
    if (this.fixed || this.byId.get(paymentId)?.heldForOperator !== 'afterCharge') return;
    this.reachedComplete.add(paymentId);
    throw new HeldForOperatorError(paymentId, 'handed off (the run charges it); the ack fails until the fix');
  }

  beforeComplete(paymentId: string): void {
    if (this.fixed || !this.byId.has(paymentId)) return;
    this.reachedComplete.add(paymentId);
    throw new HeldForOperatorError(paymentId, 'the provider charged; completing fails until the fix');
  }
}

/** Runs the sweep until a run finishes without its budget stopping it; a run failing with a retryable store error is run again (up to 5 times). */
async function sweepToTheEnd(sweeper: ExpirySweeper): Promise<PartSweepReport> {
  const total = emptyPartSweep();
  for (;;) {
    let report;
    try {
      report = await sweeper.sweep();
    } catch (error) {
      if (error instanceof StoreUnavailableError && total.retried < 5) {
        total.retried++;
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      }
      throw error;
    }
    total.runs++;
    for (const k of [
      'scanned',
      'deleted',
      'deletedLocalRows',
      'skipped',
      'skippedLeased',
      'skippedChanged',
      'alreadyDeleted',
      'requests',
      'heldExtended',
    ] as const)
      total[k] += report[k];
    total.held = Math.max(total.held, report.held);
    if (!report.stoppedByBudget) return total;
  }
}

/** Crashes before/after the claim and before completing it, by wrapping the rig's store; and the held payments' failures. */
function injectStoreCrashes(rig: PaymentsRig, env: ChaosEnvironment, held: HeldPayments): void {
  const store = rig.store;
  const claim = store.claim.bind(store);
  const complete = store.complete.bind(store);
  store.claim = async (key, digest, claimOptions) => {
    held.beforeClaim(key.key);
    env.faults.maybeCrash(CrashPoint.BeforeClaim, key.key);
    const outcome = await claim(key, digest, claimOptions);
    if (outcome.kind === 'claimed' || outcome.kind === 'reclaimed') env.faults.maybeCrash(CrashPoint.AfterClaim, key.key);
    return outcome;
  };
  store.complete = async (claimed, result, effects) => {
    env.faults.maybeCrash(CrashPoint.BeforeComplete, claimed.key.key);
    held.beforeComplete(claimed.key.key);
    return complete(claimed, result, effects);
  };
}

const EFFECT_OUTCOMES = new Set(['processed', 'reclaimed', 'duplicate']);

type Amounted = { amount: number };
const amountOf = (m: LogicalMessage) => (m.body as Amounted).amount;

async function verifyPayments(
  rig: PaymentsRig,
  messages: readonly LogicalMessage[],
  ledger: Pick<Ledger, 'fate'>,
  provider: ProviderHandle,
  withheld: ReadonlySet<number>,
  phase: (PaymentsPhaseState & { held: HeldPayments }) | undefined,
  design: PaymentsDesign = 'hold',
): Promise<PartReport> {
  const violations: string[] = [];
  const lostMessages: string[] = [];
  const label = (m: LogicalMessage) => `#${m.index} ${m.kind} ${m.messageId ?? '(no MessageId)'}`;
  const valid = messages.filter((m) => m.kind === 'charge' || m.kind === 'decline');
  const chargeable = valid.filter((m) => m.kind === 'charge');
  const reuses = messages.filter((m) => m.kind === 'reusedKey' || m.kind === 'reusedAfterExpiry');
  const ours = new Map(valid.map((m) => [m.messageId!, m]));
  let duplicatesDetected = 0;
  let deadLetteredOnly = 0;
  const awaitingOperator: LogicalMessage[] = [];
  /** Handoff: charge payments that ended `failed` with a reason (retry budget spent), none charged as acknowledged. */
  const failedWithReason: LogicalMessage[] = [];
  /** Payments held for an operator: neither the provider's key memory nor a look-up could decide (issue 34). */
  const heldByProvider = new Set<number>();
  const withoutOutcome: string[] = [];
  const completedCharge = new Set<number>();
  const ownChargeIds = new Map<string, Set<string>>();

  // Charge ids the originals were acknowledged with: a reused key must never be answered with one of them.
  for (const m of valid) {
    for (const r of ledger.fate(PART, m.index).completions as PaymentDeliveryResult[]) {
      if ('result' in r && r.result.status === 'succeeded') noteChargeId(ownChargeIds, m.messageId!, r.result);
    }
  }
  // A reused key met after the sweep (no record left): a new payment of its own amount. The provider
  // refuses the key with another body (422: `rejected`), or, if it no longer knows the key, charges
  // the new amount; never the first payment's charge. Its copies and redeliveries are duplicates of
  // it and get the same stored result.
  const newPaymentAfterExpiry = (m: LogicalMessage, r: PaymentDeliveryResult): boolean => {
    if (!EFFECT_OUTCOMES.has(r.outcome) || !('result' in r)) return false;
    if (r.result.status === 'rejected') return true;
    return r.result.status === 'succeeded' && r.result.amount === amountOf(m) && !(ownChargeIds.get(m.messageId!)?.has(r.result.chargeId) ?? false);
  };
  const phaseCounts = {
    reuseSent: 0,
    reuseRejected: 0,
    reuseRejected422: 0,
    reuseCharged: 0,
    reuseParked: 0,
    lateReusedKeysAsNew: 0,
    resubmittedCopies: 0,
    resubmittedMessages: 0,
    resubmittedCompleted: 0,
    resubmittedParked: 0,
    stuck: 0,
  };

  for (const m of messages) {
    const fate = ledger.fate(PART, m.index);
    const results = fate.completions as PaymentDeliveryResult[];
    duplicatesDetected += results.filter((r) => r.outcome === 'duplicate').length;
    const expected = (r: PaymentDeliveryResult, epoch: number) => {
      switch (m.kind) {
        case 'malformed':
          return r.outcome === 'parked' && r.reason.startsWith(`${m.expectedParkReason}:`);
        case 'reusedKey':
          // Delivered after the jump, its original's record may be gone: then it is a new payment.
          return r.outcome === 'keyReused' || (epoch > 0 && newPaymentAfterExpiry(m, r));
        case 'reusedAfterExpiry':
          // keyReused: a copy of another payload re-created the record after the sweep (never by design here).
          return r.outcome === 'keyReused' || newPaymentAfterExpiry(m, r);
        default:
          // Charged (or declined), or, handoff, `failed` with its reason: the retry budget was spent (an operator retries it).
          return (
            EFFECT_OUTCOMES.has(r.outcome) &&
            'result' in r &&
            (r.result.status === (m.kind === 'decline' ? 'declined' : 'succeeded') || (r.result.status === 'failed' && r.result.reason.trim() !== ''))
          );
      }
    };
    results.forEach((r, i) => {
      if (expected(r, fate.completionEpochs[i])) return;
      if (
        (m.kind === 'reusedKey' || m.kind === 'reusedAfterExpiry') &&
        'result' in r &&
        r.result.status === 'succeeded' &&
        ownChargeIds.get(m.messageId!)?.has(r.result.chargeId)
      ) {
        violations.push(`${label(m)} (amount ${amountOf(m)}) was acknowledged with the first payment's charge ${r.result.chargeId}`);
      } else violations.push(`${label(m)} was completed as ${JSON.stringify(r)}`);
    });
    const completed = results.some((r, i) => expected(r, fate.completionEpochs[i]));
    // Handoff: acknowledged, but no record result for its payload (the run never completed it): neither charged nor failed.
    if (m.kind !== 'malformed' && results.some((r) => r.outcome === 'handedOff' || r.outcome === 'inProgress')) withoutOutcome.push(label(m));
    const succeeded = results.some((r) => 'result' in r && r.result.status === 'succeeded');
    if (completed && m.kind === 'charge' && succeeded) completedCharge.add(m.index);
    if (completed && m.kind === 'charge' && !succeeded && results.some((r) => 'result' in r && r.result.status === 'failed')) failedWithReason.push(m);
    if (results.some((r) => 'result' in r && r.result.status === 'failed' && r.result.code === 'held-for-operator')) heldByProvider.add(m.index);
    if (m.kind === 'reusedKey' && results.some((r, i) => fate.completionEpochs[i] > 0 && r.outcome !== 'keyReused' && expected(r, 1)))
      phaseCounts.lateReusedKeysAsNew++;
    if (m.kind === 'reusedAfterExpiry' && fate.copiesSent > 0) {
      phaseCounts.reuseSent++;
      if (results.some((r) => r.outcome === 'keyReused')) phaseCounts.reuseParked++;
      const runs = results.filter((r) => newPaymentAfterExpiry(m, r));
      if (runs.some((r) => 'result' in r && r.result.status === 'rejected')) phaseCounts.reuseRejected++;
      if (runs.some((r) => 'result' in r && r.result.status === 'rejected' && r.result.reason.includes('(422)'))) phaseCounts.reuseRejected422++;
      if (runs.some((r) => 'result' in r && r.result.status === 'succeeded')) phaseCounts.reuseCharged++;
    }
    if (fate.resubmitted > 0) {
      phaseCounts.resubmittedCopies += fate.resubmitted;
      phaseCounts.resubmittedMessages++;
      if (completed) phaseCounts.resubmittedCompleted++;
      if (completed && results.some((r) => r.outcome === 'parked' || r.outcome === 'keyReused')) phaseCounts.resubmittedParked++;
      if (!completed) {
        phaseCounts.stuck++;
        violations.push(
          `${label(m)} was resubmitted from the DLQ after the sweep but never completed (${fate.deadLettered.length > 0 ? 'dead-lettered again' : 'not settled'}): stuck`,
        );
      }
    }
    if (!completed) {
      // A failed charge orchestration is retried by the next delivery (a new run); failing on every one of them is a broken charge, not chaos.
      const failedRun = fate.deadLettered.find((d) => /orchestration failed/.test(d.lastError));
      if (failedRun && m.kind !== 'malformed')
        violations.push(`${label(m)} was dead-lettered with its charge orchestration failing: ${failedRun.lastError.slice(0, 300)}`);
      if (fate.deadLettered.length > 0) {
        deadLetteredOnly++;
        if (m.kind === 'charge') awaitingOperator.push(m);
      } else if (!withheld.has(m.index) && !(fate.copiesSent === 0 && fate.copiesDropped > 0)) {
        lostMessages.push(label(m));
      }
    }
  }

  // Effective charges: from the provider's own ledger when it can be read.
  const malformedIds = new Set(
    messages.filter((m) => m.kind === 'malformed').map((m) => (typeof m.body === 'object' ? String((m.body as { paymentId?: unknown }).paymentId) : '')),
  );
  const ledgerCharges = await provider.charges();
  const chargesBy = new Map<string, number[]>();
  let source = ledgerCharges?.source ?? 'own-count';
  if (ledgerCharges) {
    for (const c of ledgerCharges.charges) {
      if (!ours.has(c.paymentId) && !malformedIds.has(c.paymentId)) continue;
      chargesBy.set(c.paymentId, [...(chargesBy.get(c.paymentId) ?? []), c.amount]);
    }
  } else {
    // No ledger: distinct succeeded charge ids seen in results and in the entities of dead-lettered payments.
    for (const m of awaitingOperator) {
      const paymentKey = keyFromMessageId(PART, m.messageId);
      const record = await rig.store.get(paymentKey);
      const state = record && (await rig.workflow.entityState(chargeEntityKey(record.recordId, record.createdAtMs, record.digest)));
      if (state?.status === 'completed' && state.result.status === 'succeeded') noteChargeId(ownChargeIds, m.messageId!, state.result);
    }
    for (const [id, chargeIds] of ownChargeIds)
      chargesBy.set(
        id,
        [...chargeIds].map(() => amountOf(ours.get(id)!)),
      );
    // Reused keys charged as new payments after expiry, with their own amount and charge ids.
    for (const m of reuses) {
      const ids = new Set<string>();
      for (const r of ledger.fate(PART, m.index).completions as PaymentDeliveryResult[])
        if (newPaymentAfterExpiry(m, r) && 'result' in r && r.result.status === 'succeeded') ids.add(r.result.chargeId);
      for (const _ of ids) chargesBy.set(m.messageId!, [...(chargesBy.get(m.messageId!) ?? []), amountOf(m)]);
    }
    source = 'own-count';
  }
  const chargesOf = (id: string) => chargesBy.get(id) ?? [];
  for (const id of chargesBy.keys()) if (!ours.has(id)) violations.push(`${id} is not a valid payment of this run but was charged`);
  const stillAwaiting = awaitingOperator.filter((m) => chargesOf(m.messageId!).filter((a) => a === amountOf(m)).length === 0);
  const doubleEffects: string[] = [];
  let reuseChargesAccepted = 0;
  for (const m of valid) {
    const amounts = chargesOf(m.messageId!);
    const amount = amountOf(m);
    const own = amounts.filter((a) => a === amount).length;
    if (own > 1) doubleEffects.push(m.messageId!);
    if (m.kind === 'decline' && own > 0) violations.push(`${label(m)} was declined but charged ${own} time(s)`);
    if (m.kind === 'charge' && completedCharge.has(m.index) && own === 0) violations.push(`${label(m)} was completed but never charged`);
    // Other amounts: only a reuse of this key, processed as a new payment after expiry, may have one charge of its own amount.
    const reusesOfKey = reuses.filter((r) => r.messageId === m.messageId);
    let accounted = own;
    for (const r of reusesOfKey) {
      const n = amounts.filter((a) => a === amountOf(r)).length;
      accounted += n;
      if (n === 0) continue;
      const runs = (ledger.fate(PART, r.index).completions as PaymentDeliveryResult[]).filter(
        (x) => newPaymentAfterExpiry(r, x) && 'result' in x && x.result.status === 'succeeded',
      );
      if (n > 1) doubleEffects.push(`${m.messageId} (reused for ${amountOf(r)})`);
      if (runs.length === 0) violations.push(`${label(r)} was charged ${amountOf(r)} though it was never processed as a new payment`);
      else if (provider.fake && !provider.fake.forgetsKeys)
        violations.push(`${label(r)} was charged ${amountOf(r)}: the demo's provider never forgets a key, so it was sent with another Idempotency-Key`);
      else reuseChargesAccepted += Math.min(n, 1);
    }
    if (accounted < amounts.length) violations.push(`${label(m)} was charged ${amounts.join(', ')}; its own amount is ${amount}`);
  }
  if (provider.fake) {
    const severalKeys = provider.fake.stats().paymentsWithSeveralKeys.filter((id) => ours.has(id));
    if (severalKeys.length > 0) violations.push(`payments sent to the provider with more than one Idempotency-Key: ${severalKeys.slice(0, 10).join(', ')}`);
  }
  const effectiveCharges = [...chargesBy.values()].reduce((sum, a) => sum + a.length, 0);
  // A failed payment the provider did not charge is not expected to be (one it charged on a lost answer is: once).
  const failedUncharged = failedWithReason.filter((m) => chargesOf(m.messageId!).length === 0).length;
  const expectedCharges = chargeable.length - stillAwaiting.length - failedUncharged + reuseChargesAccepted;
  if (effectiveCharges !== expectedCharges) {
    violations.push(
      `effective charges ${effectiveCharges} != chargeable ${chargeable.length} - awaiting operator in the DLQ ${stillAwaiting.length}` +
        (failedUncharged > 0 ? ` - failed with a reason ${failedUncharged}` : '') +
        (reuseChargesAccepted > 0 ? ` + reused keys charged as new payments after expiry ${reuseChargesAccepted}` : ''),
    );
  }

  // Parking: every malformed message with its reason, every reused key answered keyReused with key-reused.
  const parked = await rig.parking.list(PART);
  const parkedByReason: Record<string, number> = {};
  for (const p of parked) parkedByReason[p.reason] = (parkedByReason[p.reason] ?? 0) + 1;
  for (const m of messages.filter((x) => x.kind === 'malformed' || x.kind === 'reusedKey' || x.kind === 'reusedAfterExpiry')) {
    const fate = ledger.fate(PART, m.index);
    if (fate.copiesSent === 0 || (fate.completions.length === 0 && fate.deadLettered.length > 0)) continue;
    if (m.kind !== 'malformed' && !(fate.completions as PaymentDeliveryResult[]).some((r) => r.outcome === 'keyReused')) continue;
    const reason = m.expectedParkReason ?? 'key-reused';
    const body = Buffer.from(typeof m.body === 'string' ? m.body : JSON.stringify(m.body));
    const found = parked.some((p) => p.reason === reason && p.body.equals(body) && (m.messageId === undefined || p.messageId === m.messageId));
    if (!found) violations.push(`${label(m)} is not parked with reason ${reason}`);
  }

  // Nothing left in progress: every key's record is completed or gone (swept), unless a message of it sits in the DLQ.
  const inDlq = new Set(messages.filter((m) => ledger.fate(PART, m.index).deadLettered.length > 0).map((m) => m.messageId));
  const leftInProgress: string[] = [];
  const rowMismatches: string[] = [];
  const ids = [...new Set([...valid, ...reuses].map((m) => m.messageId!))];
  await forEachLimit(ids, 16, async (id) => {
    const key = keyFromMessageId(PART, id);
    const record = await rig.store.get(key);
    if (record && record.status !== RecordStatus.Completed && !inDlq.has(id)) leftInProgress.push(`${id} (${record.status}, attempt ${record.attempt})`);
    if (!record || record.status !== RecordStatus.Completed) return;
    const result = record.result as ChargeResult | undefined;
    // Every completed payment is charged (or declined, rejected) or failed with its reason, on record and row alike.
    if (result?.status === 'failed' && !result.reason?.trim()) rowMismatches.push(`${id}: failed without a reason`);
    // After the sweep the Payment row is that of the record's own payload (never a swept lifetime's).
    const m = [...valid, ...reuses].find((x) => x.messageId === id && payloadDigest(x.body) === record.digest);
    if (!m) {
      rowMismatches.push(`${id}: its record's digest is none of the run's payloads for it`);
      return;
    }
    const address = rig.store.addressOf(key);
    const row = await rig.store.client.getEntity<Record<string, unknown>>(address.partitionKey, `${address.rowKey}~payment`).catch(() => undefined);
    if (!row || row.amount !== amountOf(m) || row.state !== result?.status || (result?.status === 'failed' && row.reason !== result.reason))
      rowMismatches.push(
        `${id}: Payment row ${row ? `amount ${String(row.amount)}, state ${String(row.state)}` : 'missing'}; expected amount ${amountOf(m)}, state ${result?.status}`,
      );
  });
  for (const x of leftInProgress.slice(0, 10)) violations.push(`${x} is left in progress with no message of it in the DLQ`);
  for (const x of withoutOutcome.slice(0, 5)) {
    const id = x.split(' ').at(-1)!;
    const record = await rig.store.get(keyFromMessageId(PART, id));
    violations.push(
      `${x} was acknowledged with its charge handed off; its record now: ${record ? `${record.status}, attempt ${record.attempt}, result ${JSON.stringify(record.result ?? null)}` : 'none (swept?)'}`,
    );
  }
  // Local rows live and die with their marker: after the sweep, no Payment row is left without one.
  const orphanLocalRows = await findOrphanLocalRows(rig);
  if (orphanLocalRows.length > 0)
    violations.push(
      `${orphanLocalRows.length} local row(s) without their marker (not deleted with it by the sweep): ${orphanLocalRows.slice(0, 5).join(', ')}`,
    );
  for (const x of rowMismatches.slice(0, 10)) violations.push(x);
  // Every charge orchestration ends: after the drain none is pending or running. One that cannot finish
  // (e.g. an orchestrator that is not deterministic on replay) would otherwise only show as slow deliveries.
  const unfinished = rig.backend ? await rig.backend.store.unfinishedInstances() : [];
  if (unfinished.length > 0) violations.push(`${unfinished.length} charge orchestration(s) never finished: ${unfinished.slice(0, 5).join(', ')}`);
  // A charge orchestration may fail only as designed (the provider's retries spent, a stale attempt);
  // any other failure (the engine's non-determinism check, a missing function, a bug) is a broken charge, even when
  // a later run or an operator's resubmission completed the payment.
  const failed = rig.backend && 'failedInstances' in rig.backend.store ? await rig.backend.store.failedInstances() : [];
  const unexpected = failed.filter((f) => !EXPECTED_CHARGE_FAILURE.test(f.output));
  if (unexpected.length > 0)
    violations.push(
      `${unexpected.length} charge orchestration(s) failed unexpectedly, e.g. ${unexpected[0].instanceId}: ${unexpected[0].output.replace(/\s+/g, ' ').slice(0, 300)}`,
    );

  const held = phase?.held;
  return {
    name: PART,
    messages: messages.length,
    unique: valid.length,
    duplicatesDetected,
    parkedByReason,
    lostMessages,
    doubleEffects,
    violations,
    details: {
      declined: valid.length - chargeable.length,
      chargeable: chargeable.length,
      malformed: messages.filter((m) => m.kind === 'malformed').length,
      reusedKeys: messages.filter((m) => m.kind === 'reusedKey').length,
      design,
      failedWithReason: failedWithReason.length,
      heldForOperatorUndecided: heldByProvider.size,
      acknowledgedWithoutOutcome: withoutOutcome.length,
      failedButCharged: failedWithReason.length - failedUncharged,
      effectiveCharges,
      effectiveChargesSource: source,
      expectedCharges,
      chargeableAwaitingOperator: stillAwaiting.length,
      deadLetteredWithoutCompletion: deadLetteredOnly,
      reusedKeysWithheld: [...withheld].filter((i) => messages[i].kind === 'reusedKey').length,
      leftInProgress: leftInProgress.length,
      orphanLocalRows: orphanLocalRows.length,
      // Host kills requested and restarts.
      durable: rig.backend ? { ...rig.backend.counters, unfinishedOrchestrations: unfinished.length } : null,
      ...(phase
        ? {
            timePhase: {
              ran: phase.ran,
              heldForOperator: held!.all.length,
              heldChargedBeforeDlq: held!.reachedComplete.size,
              resubmittedMessages: phaseCounts.resubmittedMessages,
              resubmittedCopies: phaseCounts.resubmittedCopies,
              resubmittedCompleted: phaseCounts.resubmittedCompleted,
              resubmittedParked: phaseCounts.resubmittedParked,
              resubmittedStuck: phaseCounts.stuck,
              reusedAfterExpiry: messages.filter((m) => m.kind === 'reusedAfterExpiry').length,
              reusedAfterExpirySent: phaseCounts.reuseSent,
              reusedAfterExpiryWithheld: phase.withheldReuses.size,
              reusedAfterExpiryRejected: phaseCounts.reuseRejected,
              reusedAfterExpiryRejected422: phaseCounts.reuseRejected422,
              reusedAfterExpiryCharged: phaseCounts.reuseCharged,
              reusedAfterExpiryParked: phaseCounts.reuseParked,
              reusedKeysProcessedAsNewAfterExpiry: phaseCounts.lateReusedKeysAsNew,
              leftInProgress: leftInProgress.length,
              orphanLocalRows: orphanLocalRows.length,
            },
          }
        : {}),
    },
  };
}

/** The completed records of the run's payment ids, into `into` (paymentId -> digest and result). */
async function readResults(rig: PaymentsRig, messages: readonly LogicalMessage[], into: FinalResults): Promise<void> {
  const ids = [...new Set(messages.filter((m) => m.kind !== 'malformed' && m.messageId !== undefined).map((m) => String(m.messageId)))];
  await forEachLimit(ids, 16, async (id) => {
    const record = await rig.store.get(keyFromMessageId(PART, id));
    if (record?.status === RecordStatus.Completed) into.set(id, { digest: record.digest, result: record.result as ChargeResult });
  });
}

/** RowKeys of local rows (`<marker>~<name>`) of the idempotency table whose marker does not exist. */
async function findOrphanLocalRows(rig: PaymentsRig): Promise<string[]> {
  const rowKeys = new Set<string>();
  for await (const e of rig.store.client.listEntities<Record<string, unknown>>({ queryOptions: { select: ['PartitionKey', 'RowKey'] } })) {
    rowKeys.add(`${e.partitionKey}/${e.rowKey}`);
  }
  return [...rowKeys].filter((k) => k.includes('~') && !rowKeys.has(k.slice(0, k.indexOf('~'))));
}

async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

function noteChargeId(byPayment: Map<string, Set<string>>, paymentId: string, result: Extract<ChargeResult, { status: 'succeeded' }>): void {
  let ids = byPayment.get(paymentId);
  if (!ids) byPayment.set(paymentId, (ids = new Set()));
  ids.add(result.chargeId);
}
