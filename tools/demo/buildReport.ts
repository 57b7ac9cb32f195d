import { type LocalServiceBus } from '../local/LocalServiceBus';
import { CRASH_POINTS, type CrashPoint, type FaultPlan } from './faults';
import { type Ledger, type SendTag } from './ledger';
import { emptyPartSweep, type PartReport } from './part';
import type { TimePhaseReport, ChaosReport } from './chaosReport';
import { statusesOf } from './unfinishedRuns';

export function buildReport(
  o: { seed: number },
  parts: PartReport[],
  ledger: Ledger,
  bus: LocalServiceBus<SendTag>,
  faults: FaultPlan,
  providerFaults: Record<string, number>,
  storageOutages: number,
  connectionsReset: number,
  elapsedMs: number,
  timePhase: TimePhaseReport | null,
  providerLookup: ChaosReport['providerLookup'],
): ChaosReport {
  const payments = parts.find((p) => p.name === 'payments');
  const orders = parts.find((p) => p.name === 'orders');
  const queues = bus.allQueues();
  const sum = (f: (q: (typeof queues)[number]) => number) => queues.reduce((s, q) => s + f(q), 0);
  const messages = parts.reduce((s, p) => s + p.messages, 0);
  const sends = sum((q) => q.stats.sent);
  const deadLetteredMessages = queues.flatMap((q) =>
    q.deadLetters.map((d) => ({
      queue: q.name,
      messageId: typeof d.message.messageId === 'string' || typeof d.message.messageId === 'number' ? String(d.message.messageId) : '',
      deliveryCount: d.deliveryCount,
      reason: d.reason,
      lastError: d.lastError,
    })),
  );
  const deadLetteredByReason: Record<string, number> = {};
  for (const d of deadLetteredMessages) deadLetteredByReason[d.reason] = (deadLetteredByReason[d.reason] ?? 0) + 1;
  const parkedByReason: Record<string, number> = {};
  for (const part of parts) for (const [reason, n] of Object.entries(part.parkedByReason)) parkedByReason[`${part.name}:${reason}`] = n;
  const producerDuplicates = sends - countFirstCopies(ledger, parts);
  const lostMessages = parts.flatMap((p) => p.lostMessages.map((m) => `${p.name} ${m}`));
  const unfinishedMessages = parts.flatMap((p) => (p.unfinishedMessages ?? []).map((m) => `${p.name} ${m}`));
  const violations = parts.flatMap((p) => p.violations.map((v) => `${p.name}: ${v}`));
  const doubleCharged = payments?.doubleEffects.length ?? 0;
  if (lostMessages.length > 0) violations.push(`${lostMessages.length} message(s) lost`);
  if (unfinishedMessages.length > 0) violations.push(unfinishedViolation(unfinishedMessages));
  if (doubleCharged > 0) violations.push(`${doubleCharged} payment(s) charged twice: ${payments!.doubleEffects.slice(0, 10).join(', ')}`);
  const pd = payments?.details ?? {};
  const od = orders?.details ?? {};
  if (timePhase && timePhase.atElapsedMs < 0) violations.push('the time phase never ran (the run timed out before it)');
  if (orders && orders.doubleEffects.length > 0)
    violations.push(`${orders.doubleEffects.length} order(s) created twice: ${orders.doubleEffects.slice(0, 10).join(', ')}`);
  return {
    ok: violations.length === 0,
    violations,
    seed: o.seed,
    messages,
    uniquePayments: payments?.unique ?? 0,
    uniqueOrders: orders?.unique ?? 0,
    messagesByPart: Object.fromEntries(parts.map((p) => [p.name, p.messages])),
    ordersCreated: Number(od.ordersCreated ?? 0),
    statusApplied: Number(od.statusApplied ?? 0),
    staleVersionsIgnored: Number(od.staleVersionsIgnored ?? 0),
    ordersParkedByReason: { ...(orders?.parkedByReason ?? {}) },
    sends,
    producerDuplicates,
    brokerDropped: sum((q) => q.stats.droppedAsDuplicate),
    deliveries: ledger.deliveries,
    redeliveries: ledger.redeliveries,
    duplicatesDelivered: producerDuplicates + ledger.redeliveries,
    duplicatesDetected: parts.reduce((s, p) => s + p.duplicatesDetected, 0),
    crashesInjected: faults.total,
    crashesByPoint: Object.fromEntries(CRASH_POINTS.map((p) => [p, faults.injected[p]])) as Record<CrashPoint, number>,
    slowHandlers: faults.injected.slowHandler,
    providerFaults,
    providerLookup,
    storageOutages,
    connectionsReset,
    abandoned: sum((q) => q.stats.abandoned),
    lockExpired: sum((q) => q.stats.lockExpired),
    lockLost: sum((q) => q.stats.lockLost),
    deadLettered: deadLetteredMessages.length,
    deadLetteredByReason,
    deadLetteredMessages,
    parked: Object.values(parkedByReason).reduce((s, n) => s + n, 0),
    parkedByReason,
    effectiveCharges: Number(pd.effectiveCharges ?? 0),
    effectiveChargesSource: typeof pd.effectiveChargesSource === 'string' ? pd.effectiveChargesSource : 'none',
    expectedCharges: Number(pd.expectedCharges ?? 0),
    lost: lostMessages.length,
    lostMessages,
    unfinished: unfinishedMessages.length,
    unfinishedMessages,
    doubleCharged,
    timePhase,
    parts,
    elapsedMs,
  };
}

/** The payments part's own figures of the phase (`details.timePhase`). */
export type PaymentsPhaseFigures = Omit<
  TimePhaseReport,
  'atCompleted' | 'atElapsedMs' | 'jumpedMs' | 'expiredAtJump' | 'sweepHold' | 'sweep' | 'sweepMs' | 'resubmitted'
>;

export function phaseReport(phase: Omit<TimePhaseReport, keyof PaymentsPhaseFigures> | undefined, parts: PartReport[]): TimePhaseReport {
  const figures = (parts.find((p) => p.name === 'payments')?.details.timePhase ?? {}) as Partial<PaymentsPhaseFigures>;
  const n = (k: keyof PaymentsPhaseFigures) => Number(figures[k] ?? 0);
  return {
    ...(phase ?? { atCompleted: -1, atElapsedMs: -1, jumpedMs: 0, expiredAtJump: 0, sweepHold: false, sweep: emptyPartSweep(), sweepMs: 0, resubmitted: 0 }),
    heldForOperator: n('heldForOperator'),
    heldChargedBeforeDlq: n('heldChargedBeforeDlq'),
    resubmittedMessages: n('resubmittedMessages'),
    resubmittedCompleted: n('resubmittedCompleted'),
    resubmittedParked: n('resubmittedParked'),
    resubmittedStuck: n('resubmittedStuck'),
    reusedAfterExpiry: n('reusedAfterExpiry'),
    reusedAfterExpirySent: n('reusedAfterExpirySent'),
    reusedAfterExpiryWithheld: n('reusedAfterExpiryWithheld'),
    reusedAfterExpiryRejected: n('reusedAfterExpiryRejected'),
    reusedAfterExpiryRejected422: n('reusedAfterExpiryRejected422'),
    reusedAfterExpiryCharged: n('reusedAfterExpiryCharged'),
    reusedAfterExpiryParked: n('reusedAfterExpiryParked'),
    reusedKeysProcessedAsNewAfterExpiry: n('reusedKeysProcessedAsNewAfterExpiry'),
    leftInProgress: n('leftInProgress'),
    orphanLocalRows: n('orphanLocalRows'),
  };
}

/** 2592060000 -> "30d 0h 1m". */
export function formatDuration(ms: number): string {
  const d = Math.floor(ms / 86_400_000);
  const h = Math.floor((ms % 86_400_000) / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${d}d ${h}h ${m}m${s ? ` ${s}s` : ''}`;
}

export function copyId(tag: SendTag): string {
  return `${tag.part}:${tag.index}:${tag.copy}`;
}

/** Logical messages with at least one accepted send (their first accepted copy is not a duplicate). */
function countFirstCopies(ledger: Ledger, parts: PartReport[]): number {
  let n = 0;
  for (const part of parts) for (let i = 0; i < part.messages; i++) if (ledger.fate(part.name, i).copiesSent > 0) n++;
  return n;
}

/**
 * The violation for messages unfinished at verification: their runs were still going when the checks ran (a machine
 * too slow for the rig's drain), so the run proves nothing about them; not counted as lost.
 */
export function unfinishedViolation(labels: readonly string[]): string {
  return (
    `${labels.length} payment(s) unfinished at verification (not lost: their charge runs were not final when checked, ` +
    `${statusesOf(labels)}; the drain gave up on a starved machine?): ${labels.slice(0, 5).join(', ')}`
  );
}
