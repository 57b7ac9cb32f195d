import { keyFromMessageId } from '../../src/core/keys';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import { chargeEntityKey } from '../../src/payments/ChargeWorkflow';
import type { ChargeResult } from '../../src/payments/schema';
import type { QueueMessage } from '../local/LocalQueue';
import { startPaymentsRig, type PaymentsRig } from '../local/paymentsRig';
import { CrashPoint } from './faults';
import type { Ledger, SendTag } from './ledger';
import { sendsOf, type ChaosEnvironment, type ChaosPart, type PartReport } from './part';
import { buildPaymentsWorkload, type LogicalMessage } from './paymentsWorkload';
import type { ProviderHandle } from './providerLedger';

export interface PaymentsPartOptions {
  readonly messages: number;
  readonly duplicateRate: number;
  readonly provider: ProviderHandle;
  /** Lease of a claim; a delivery waits at most 80 % of it. */
  readonly leaseMs: number;
  readonly providerTimeoutMs: number;
}

const PART = 'payments';

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
    ...(external ? { declineShare: 0, runTag: Date.now().toString(36) } : {}),
  });
  const rig = await startPaymentsRig({
    tableConnectionString: env.tableConnectionString,
    durableTableConnectionString: env.directTableConnectionString,
    providerUrl: options.provider.url,
    providerTimeoutMs: options.providerTimeoutMs,
    leaseMs: options.leaseMs,
    restartDelayMs: 100,
    activityRetry: { maxAttempts: 3, firstRetryIntervalMs: 50 },
    crashBefore: (step, instanceId) => step === 'after-activity:charge' && env.faults.shouldCrash(CrashPoint.AfterCharge, instanceId),
  });
  injectStoreCrashes(rig, env);

  const send = (message: LogicalMessage, copy: number): QueueMessage<SendTag> => ({
    messageId: message.messageId,
    body: message.body,
    correlationId: `chaos-${env.seed}`,
    tag: { part: PART, index: message.index, copy },
  });
  const waiting = new Map<number, LogicalMessage[]>();
  const withheld = new Set<number>();
  for (const message of workload.messages) {
    if (message.reusesIndex === undefined) continue;
    waiting.set(message.reusesIndex, [...(waiting.get(message.reusesIndex) ?? []), message]);
  }

  return {
    consumer: { name: PART, queue: PART, deliver: (body, meta) => rig.deliver(body, meta) },
    initialSends: workload.sends.map((s) => send(workload.messages[s.index]!, s.copy)),
    plannedSends: sendsOf(workload.messages),
    sendsAfterSettled(index, settled) {
      const released = waiting.get(index) ?? [];
      waiting.delete(index);
      if (settled === 'deadLettered') {
        // The key's first use was never processed: its "reuse" would be the key's first use. Not sent.
        for (const m of released) withheld.add(m.index);
        return [];
      }
      return released.flatMap((m) => Array.from({ length: 1 + m.extraCopies }, (_, copy) => send(m, copy)));
    },
    withheldSends: () => sendsOf([...withheld].map((i) => workload.messages[i]!)),
    drain: () => rig.workflow.stop(),
    verify: (ledger) => verifyPayments(rig, workload.messages, ledger, options.provider, withheld),
  };
}

/** Crashes before/after the claim and before completing it, by wrapping the rig's store. */
function injectStoreCrashes(rig: PaymentsRig, env: ChaosEnvironment): void {
  const store = rig.store;
  const claim = store.claim.bind(store);
  const complete = store.complete.bind(store);
  store.claim = async (key, digest, claimOptions) => {
    env.faults.maybeCrash(CrashPoint.BeforeClaim, key.key);
    const outcome = await claim(key, digest, claimOptions);
    if (outcome.kind === 'claimed' || outcome.kind === 'reclaimed') env.faults.maybeCrash(CrashPoint.AfterClaim, key.key);
    return outcome;
  };
  store.complete = async (held, result, effects) => {
    env.faults.maybeCrash(CrashPoint.BeforeComplete, held.key.key);
    return complete(held, result, effects);
  };
}

const EFFECT_OUTCOMES = new Set(['processed', 'reclaimed', 'duplicate']);

async function verifyPayments(rig: PaymentsRig, messages: readonly LogicalMessage[], ledger: Ledger, provider: ProviderHandle, withheld: ReadonlySet<number>): Promise<PartReport> {
  const violations: string[] = [];
  const lostMessages: string[] = [];
  const label = (m: LogicalMessage) => `#${m.index} ${m.kind} ${m.messageId ?? '(no MessageId)'}`;
  const valid = messages.filter((m) => m.kind === 'charge' || m.kind === 'decline');
  const chargeable = valid.filter((m) => m.kind === 'charge');
  let duplicatesDetected = 0;
  let deadLetteredOnly = 0;
  const awaitingOperator: LogicalMessage[] = [];
  const completedCharge = new Set<number>();
  const ownChargeIds = new Map<string, Set<string>>();

  for (const m of messages) {
    const fate = ledger.fate(PART, m.index);
    const results = fate.completions as PaymentDeliveryResult[];
    duplicatesDetected += results.filter((r) => r.outcome === 'duplicate').length;
    const expected = (r: PaymentDeliveryResult) =>
      m.kind === 'malformed'
        ? r.outcome === 'parked' && r.reason.startsWith(`${m.expectedParkReason}:`)
        : m.kind === 'reusedKey'
          ? r.outcome === 'keyReused'
          : EFFECT_OUTCOMES.has(r.outcome);
    for (const r of results.filter((x) => !expected(x))) violations.push(`${label(m)} was completed as ${JSON.stringify(r)}`);
    for (const r of results) {
      if (!('result' in r)) continue;
      const want = m.kind === 'decline' ? 'declined' : 'succeeded';
      if (r.result.status !== want) violations.push(`${label(m)} ended ${r.result.status}, expected ${want}`);
      if (r.result.status === 'succeeded') noteChargeId(ownChargeIds, m.messageId!, r.result);
    }
    const completed = results.some(expected);
    if (completed && m.kind === 'charge') completedCharge.add(m.index);
    if (!completed) {
      if (fate.deadLettered.length > 0) {
        deadLetteredOnly++;
        if (m.kind === 'charge') awaitingOperator.push(m);
      } else if (!withheld.has(m.index) && !(fate.copiesSent === 0 && fate.copiesDropped > 0)) {
        lostMessages.push(label(m));
      }
    }
  }

  // Effective charges: from the provider's own ledger when it can be read.
  const ours = new Map(valid.map((m) => [m.messageId!, m]));
  const malformedIds = new Set(messages.filter((m) => m.kind === 'malformed').map((m) => (typeof m.body === 'object' ? String((m.body as { paymentId?: unknown }).paymentId) : '')));
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
      const state = record && (await rig.workflow.entityState(chargeEntityKey(rig.store.addressOf(paymentKey).rowKey, record.createdAtMs, record.digest)));
      if (state?.status === 'completed' && state.result.status === 'succeeded') noteChargeId(ownChargeIds, m.messageId!, state.result);
    }
    for (const [id, chargeIds] of ownChargeIds) chargesBy.set(id, [...chargeIds].map(() => (ours.get(id)!.body as { amount: number }).amount));
    source = 'own-count';
  }
  const chargesOf = (id: string) => chargesBy.get(id) ?? [];
  for (const id of chargesBy.keys()) if (!ours.has(id)) violations.push(`${id} is not a valid payment of this run but was charged`);
  const stillAwaiting = awaitingOperator.filter((m) => chargesOf(m.messageId!).length === 0);
  for (const m of valid) {
    const amounts = chargesOf(m.messageId!);
    const amount = (m.body as { amount: number }).amount;
    if (m.kind === 'decline' && amounts.length > 0) violations.push(`${label(m)} was declined but charged ${amounts.length} time(s)`);
    if (m.kind === 'charge' && completedCharge.has(m.index) && amounts.length === 0) violations.push(`${label(m)} was completed but never charged`);
    if (amounts.some((a) => a !== amount)) violations.push(`${label(m)} was charged ${amounts.join(', ')} instead of ${amount}`);
  }
  const doubleEffects = [...chargesBy.entries()].filter(([, a]) => a.length > 1).map(([id]) => id);
  const effectiveCharges = [...chargesBy.values()].reduce((sum, a) => sum + a.length, 0);
  const expectedCharges = chargeable.length - stillAwaiting.length;
  if (effectiveCharges !== expectedCharges) {
    violations.push(`effective charges ${effectiveCharges} != chargeable ${chargeable.length} - awaiting operator in the DLQ ${stillAwaiting.length}`);
  }

  // Parking: every malformed message with its reason, every reused key with key-reused.
  const parked = await rig.parking.list(PART);
  const parkedByReason: Record<string, number> = {};
  for (const p of parked) parkedByReason[p.reason] = (parkedByReason[p.reason] ?? 0) + 1;
  for (const m of messages.filter((x) => x.kind === 'malformed' || x.kind === 'reusedKey')) {
    const fate = ledger.fate(PART, m.index);
    if (fate.copiesSent === 0 || (fate.completions.length === 0 && fate.deadLettered.length > 0)) continue;
    const body = Buffer.from(typeof m.body === 'string' ? m.body : JSON.stringify(m.body));
    const found = parked.some((p) => p.reason === m.expectedParkReason && p.body.equals(body) && (m.messageId === undefined || p.messageId === m.messageId));
    if (!found) violations.push(`${label(m)} is not parked with reason ${m.expectedParkReason}`);
  }

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
      effectiveCharges,
      effectiveChargesSource: source,
      expectedCharges,
      chargeableAwaitingOperator: stillAwaiting.length,
      deadLetteredWithoutCompletion: deadLetteredOnly,
      reusedKeysWithheld: withheld.size,
    },
  };
}

function noteChargeId(byPayment: Map<string, Set<string>>, paymentId: string, result: Extract<ChargeResult, { status: 'succeeded' }>): void {
  let ids = byPayment.get(paymentId);
  if (!ids) byPayment.set(paymentId, (ids = new Set()));
  ids.add(result.chargeId);
}
