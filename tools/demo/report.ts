import { formatDuration, type ChaosProgress, type ChaosReport } from './chaos';

/** One progress line for a person watching the run. */
export function formatProgress(p: ChaosProgress): string {
  const s = (p.elapsedMs / 1000).toFixed(1).padStart(6);
  if (p.phase) return `[${s}s] ${p.phase}`;
  return (
    `[${s}s] sent ${p.sent}/${p.plannedSends}  deliveries ${p.deliveries}  completed ${p.completed}  ` +
    `redeliveries ${p.redeliveries}  in flight ${p.inFlight}  crashes ${p.crashes}  dead-lettered ${p.deadLettered}` +
    (p.outage ? '  [storage outage]' : '')
  );
}

const by = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || '-';

/** The end-of-run table: figures, then the invariants with their verdicts. */
export function formatReport(r: ChaosReport): string {
  const rows: Array<[string, string | number, string?]> = [
    ['messages (logical)', r.messages, `${by(r.messagesByPart)}; incl. malformed, reused-key and status messages`],
    ['unique payments', r.uniquePayments, 'valid paymentIds (incl. declined)'],
    ['unique orders', r.uniqueOrders, 'valid orderIds'],
    ['sends', r.sends, `broker dropped ${r.brokerDropped} as duplicates`],
    ['deliveries', r.deliveries],
    ['duplicates delivered', r.duplicatesDelivered, `${r.producerDuplicates} extra producer copies + ${r.redeliveries} redeliveries`],
    ['duplicates detected', r.duplicatesDetected, 'deliveries the consumer answered "duplicate"'],
    ['crashes injected', r.crashesInjected, by(r.crashesByPoint)],
    ['slow handlers (lock lost)', r.slowHandlers, 'stalled past the lock: another receiver got the message meanwhile'],
    ['provider faults', Object.values(r.providerFaults).reduce((s, n) => s + n, 0), by(r.providerFaults)],
    ['storage outages', r.storageOutages, `${r.connectionsReset} connections reset`],
    ['abandoned / lock expired / lock lost', `${r.abandoned} / ${r.lockExpired} / ${r.lockLost}`],
    [
      'dead-lettered',
      r.deadLettered,
      `${by(r.deadLetteredByReason)}${r.timePhase && r.timePhase.resubmitted > 0 ? ` (in the DLQ at the end; ${r.timePhase.resubmitted} resubmitted by the time phase)` : ''}`,
    ],
    ['parked', r.parked, by(r.parkedByReason)],
    ['orders created', r.ordersCreated, 'order documents in the Cosmos emulator (each with its lines and one audit entry)'],
    ['status changes applied', r.statusApplied, 'newer versions written (If-Match)'],
    ['stale versions ignored', r.staleVersionsIgnored, 'older or repeated versions'],
    ['orders parked', Object.values(r.ordersParkedByReason).reduce((s, n) => s + n, 0), by(r.ordersParkedByReason)],
    ['effective charges', r.effectiveCharges, `expected ${r.expectedCharges} (source: ${r.effectiveChargesSource})`],
    ['lost', r.lost],
    ['double charged', r.doubleCharged],
    ...timePhaseRows(r),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const valueWidth = Math.max(...rows.map(([, v]) => String(v).length));
  const lines = rows.map(([k, v, note]) => `  ${k.padEnd(width)}  ${String(v).padStart(valueWidth)}${note ? `   ${note}` : ''}`);
  const dlq = r.deadLetteredMessages
    .slice(0, 5)
    .map((d) => `    DLQ ${d.queue} ${d.messageId} after ${d.deliveryCount} deliveries: ${d.reason} (${d.lastError})`);
  const verdict = r.ok ? ['  invariants: all hold'] : ['  INVARIANTS FAILED:', ...r.violations.slice(0, 20).map((v) => `    - ${v}`)];
  return [`chaos run, seed ${r.seed}, ${(r.elapsedMs / 1000).toFixed(1)} s`, ...lines, ...dlq, ...verdict].join('\n');
}

/** The time phase's lines of the table (none when it was off). */
function timePhaseRows(r: ChaosReport): Array<[string, string | number, string?]> {
  const t = r.timePhase;
  if (!t) return [['time phase', 'off', '--time-phase on to jump the clock past retention mid-run']];
  if (t.atElapsedMs < 0) return [['time phase', 'DID NOT RUN', 'the run timed out before it']];
  return [
    [
      'time phase: clock jump',
      `+${formatDuration(t.jumpedMs)}`,
      `after ${t.atCompleted} completed deliveries (${(t.atElapsedMs / 1000).toFixed(1)} s); retention + lease + 1 min`,
    ],
    [
      'time phase: swept',
      t.sweep.deleted,
      `records deleted with ${t.sweep.deletedLocalRows} local rows; scanned ${t.sweep.scanned}, skipped ${t.sweep.skipped}, ${t.sweep.requests} requests in ${t.sweep.runs} run(s), ${t.sweepMs} ms`,
    ],
    ['time phase: held for an operator', t.heldForOperator, `dead-lettered before the jump; ${t.heldChargedBeforeDlq} charged before their DLQ`],
    [
      'time phase: DLQ resubmitted',
      t.resubmitted,
      `copies of ${t.resubmittedMessages} messages: completed ${t.resubmittedCompleted} (parked ${t.resubmittedParked}), stuck ${t.resubmittedStuck}`,
    ],
    [
      'time phase: reused keys after expiry',
      t.reusedAfterExpirySent,
      `sent of ${t.reusedAfterExpiry} (withheld ${t.reusedAfterExpiryWithheld}): refused by the provider ${t.reusedAfterExpiryRejected} (422: ${t.reusedAfterExpiryRejected422}), charged own amount ${t.reusedAfterExpiryCharged}, parked key-reused ${t.reusedAfterExpiryParked}`,
    ],
    ['time phase: late reused keys as new', t.reusedKeysProcessedAsNewAfterExpiry, 'ordinary reused keys delivered after the sweep: processed as new payments'],
    ['left in progress', t.leftInProgress, 'records neither completed nor swept with no message in the DLQ'],
    ['local rows without a marker', t.orphanLocalRows, 'Payment rows the sweep should have deleted with their record'],
  ];
}

/** The one-line JSON summary (`--json`): the figures, without the per-part details. */
export function reportJson(r: ChaosReport): string {
  const { parts: _parts, ...rest } = r;
  void _parts;
  return JSON.stringify(rest);
}
