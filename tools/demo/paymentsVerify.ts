import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import type { PaymentDeliveryResult, PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import { chargeEntityKey } from '../../src/payments/ChargeWorkflow';
import type { ChargeResult } from '../../src/payments/schema';
import type { PaymentsRig } from '../local/paymentsRig';
import type { Ledger } from './ledger';
import type { PartReport } from './part';
import type { LogicalMessage } from './paymentsWorkload';
import type { ProviderHandle } from './providerLedger';
import { PART, amountOf, label, checkStoredState } from './paymentsChecks';
import type { PaymentsPhaseState, HeldPayments } from './paymentsTimePhase';
import { isUnfinishedAck, unfinishedLabel, unfinishedRunOf, type UnfinishedRuns } from './unfinishedRuns';

const EFFECT_OUTCOMES = new Set(['processed', 'reclaimed', 'duplicate']);

export async function verifyPayments(
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
  const unfinishedMessages: string[] = []; // handed off, their run still going at verification: apart from lost
  const runs: UnfinishedRuns = rig.backend && 'unfinishedRuns' in rig.backend.store ? await rig.backend.store.unfinishedRuns() : new Map<string, string>();
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
      if (expected(r, fate.completionEpochs[i]) || isUnfinishedAck(r, runs)) return;
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
    const run = unfinishedRunOf(results, runs); // still going: reported as unfinished at verification (below)
    if (m.kind !== 'malformed' && !run && results.some((r) => r.outcome === 'handedOff' || r.outcome === 'inProgress')) withoutOutcome.push(label(m));
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
        (run ? unfinishedMessages : lostMessages).push(run ? unfinishedLabel(label(m), run) : label(m));
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
      // The key's first use was this reuse's own body: the original payment never got its key kept at the provider (every
      // call of it faulted, or the fence refused it in a storage outage: it ended failed), so the reuse charges as new.
      else if (provider.fake && !provider.fake.forgetsKeys && provider.fake.firstAmountUnder(m.messageId!) !== amountOf(r))
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
  // A failed payment the provider did not charge is not expected to be (one it charged on a lost answer is: once). Its
  // own amount: a reuse of its key after expiry may have been charged under it as a new payment (counted apart).
  const failedUncharged = failedWithReason.filter((m) => !chargesOf(m.messageId!).includes(amountOf(m))).length;
  const expectedCharges = chargeable.length - stillAwaiting.length - failedUncharged + reuseChargesAccepted;
  if (effectiveCharges !== expectedCharges) {
    violations.push(
      `effective charges ${effectiveCharges} != chargeable ${chargeable.length} - awaiting operator in the DLQ ${stillAwaiting.length}` +
        (failedUncharged > 0 ? ` - failed with a reason ${failedUncharged}` : '') +
        (reuseChargesAccepted > 0 ? ` + reused keys charged as new payments after expiry ${reuseChargesAccepted}` : ''),
    );
  }

  const stored = await checkStoredState(rig, messages, ledger, [...valid, ...reuses], withoutOutcome, violations);

  const held = phase?.held;
  return {
    name: PART,
    messages: messages.length,
    unique: valid.length,
    duplicatesDetected,
    parkedByReason: stored.parkedByReason,
    lostMessages,
    unfinishedMessages,
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
      leftInProgress: stored.leftInProgress,
      orphanLocalRows: stored.orphanLocalRows,
      // Host kills requested and restarts.
      durable: rig.backend ? { ...rig.backend.counters, unfinishedOrchestrations: stored.unfinished } : null,
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
              leftInProgress: stored.leftInProgress,
              orphanLocalRows: stored.orphanLocalRows,
            },
          }
        : {}),
    },
  };
}

function noteChargeId(byPayment: Map<string, Set<string>>, paymentId: string, result: Extract<ChargeResult, { status: 'succeeded' }>): void {
  let ids = byPayment.get(paymentId);
  if (!ids) byPayment.set(paymentId, (ids = new Set()));
  ids.add(result.chargeId);
}
