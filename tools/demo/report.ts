import { wrapWords } from '../cli/wrapWords';
import { formatDuration } from './buildReport';
import type { ChaosProgress, ChaosReport } from './chaosReport';
import { verdictLine } from './verdict';
import { ledgerVerdictLine } from './ledgerCheckPart';

/** How far the run is: settled copies (completed or dead-lettered) of the planned sends. */
export function progressFraction(p: ChaosProgress): number {
  if (p.plannedSends === 0) return 1;
  return Math.min(1, (p.completed + p.deadLettered) / p.plannedSends);
}

/** `1m 05s`, `12s`: an ETA or an elapsed time for a person. */
export function formatEta(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** The ETA from the share done so far (undefined until 2 % is done). */
export function etaMs(p: ChaosProgress): number | undefined {
  const f = progressFraction(p);
  if (f < 0.02) return undefined;
  return f >= 1 ? 0 : (p.elapsedMs * (1 - f)) / f;
}

/**
 * One progress line for a person watching the run: totals, percent and ETA, then what the chaos did
 * so far. `bar` draws a 24-character bar in front (on a terminal, where the line is redrawn in place).
 */
export function formatProgress(p: ChaosProgress, options: { bar?: boolean } = {}): string {
  const s = (p.elapsedMs / 1000).toFixed(1).padStart(6);
  if (p.phase) return `[${s}s] ${p.phase}`;
  const f = progressFraction(p);
  const eta = etaMs(p);
  const settled = p.completed + p.deadLettered;
  const width = 24;
  const bar = options.bar ? `[${'#'.repeat(Math.round(f * width)).padEnd(width, '.')}] ` : '';
  return (
    `[${s}s] ${bar}${(100 * f).toFixed(0).padStart(3)}%  settled ${settled}/${p.plannedSends}  ETA ${eta === undefined ? '?' : formatEta(eta)}  ` +
    `sent ${p.sent}  deliveries ${p.deliveries}  redeliveries ${p.redeliveries}  in flight ${p.inFlight}  crashes ${p.crashes}  ` +
    `dead-lettered ${p.deadLettered}${p.charges === undefined ? '' : `  charges ${p.charges}`}` +
    (p.outage ? '  [storage outage]' : '')
  );
}

const by = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || '-';

type Row = readonly [label: string, value: string | number, note?: string];
type Section = readonly [title: string, rows: readonly Row[]];

/** The report's figures in sections (the text table and the HTML page show the same rows). */
export function reportSections(r: ChaosReport): Section[] {
  const workload: Row[] = [
    ['messages (logical)', r.messages, `${by(r.messagesByPart)}; incl. malformed, reused-key and status messages`],
    ['unique payments', r.uniquePayments, 'valid paymentIds (incl. declined)'],
    ['unique orders', r.uniqueOrders, 'valid orderIds'],
    ['sends', r.sends, `broker dropped ${r.brokerDropped} as duplicates`],
    ['deliveries', r.deliveries, 'every time a receiver got a message'],
    ['duplicates delivered', r.duplicatesDelivered, `${r.producerDuplicates} extra producer copies + ${r.redeliveries} redeliveries`],
    ['duplicates detected', r.duplicatesDetected, 'deliveries answered "duplicate" from a completed record (see below)'],
  ];
  const faults: Row[] = [
    ['crashes injected', r.crashesInjected, by(r.crashesByPoint)],
    ['slow handlers (lock lost)', r.slowHandlers, 'stalled past the lock: another receiver got the message meanwhile'],
    ['provider faults', Object.values(r.providerFaults).reduce((s, n) => s + n, 0), by(r.providerFaults)],
    [
      'provider look-ups',
      r.providerLookup.lookups ?? 'n/a',
      `PAYMENT_PROVIDER_LOOKUP ${r.providerLookup.mode}: charges looked up by key before a call that may repeat one`,
    ],
    ['storage outages', r.storageOutages, `${r.connectionsReset} connections reset`],
    ['abandoned', r.abandoned, 'handler threw: redelivered at once'],
    ['lock expired', r.lockExpired, 'crashed or lost ack: redelivered when the lock lapsed'],
    ['lock lost', r.lockLost, 'completion refused: the lock had passed to another receiver'],
  ];
  const outcome: Row[] = [
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
    [
      'failed with a reason',
      Number(r.parts.find((p) => p.name === 'payments')?.details.failedWithReason ?? 0),
      `of which held for an operator (key memory and look-up could not decide): ${Number(r.parts.find((p) => p.name === 'payments')?.details.heldForOperatorUndecided ?? 0)}`,
    ],
    [
      'reconciled at the end',
      Number(r.parts.find((p) => p.name === 'payments')?.details.reconciledAtEnd ?? 0),
      "records a run left in progress, restarted by the app's reconciler once the runs were drained (as its timer would)",
    ],
    ['effective charges', r.effectiveCharges, `expected ${r.expectedCharges} (source: ${r.effectiveChargesSource})`],
    ['lost', r.lost, 'must be 0'],
    ['unfinished at verification', r.unfinished ?? 0, 'handed off, their run still going when checked (not lost; must be 0)'],
    ['double charged', r.doubleCharged, 'must be 0'],
  ];
  return [
    ['workload', workload],
    ['faults injected', faults],
    ['outcome', outcome],
    ['time phase', timePhaseRows(r).map(([k, v, note]): Row => [k.replace(/^time phase: /, ''), v, note])],
    ...rewardsSection(r),
  ];
}

/** The rewards part (Event Hubs, tools/demo/rewardsPart.ts), when it ran. */
function rewardsSection(r: ChaosReport): Section[] {
  const part = r.parts.find((p) => p.name === 'rewards');
  if (!part) return [];
  const d = (name: string) => Number(part.details[name] ?? 0);
  const rows: Row[] = [
    ['events produced', d('appended'), `${part.unique} distinct payments + ${d('producerRetries')} producer retries`],
    ['batches', d('batches'), `${d('batchFailures')} failed and retried (storage outages); ${d('hostCrashes')} host crashes before a checkpoint`],
    ['partitions moved', d('partitionsMoved'), 'of 4: read by more than one host'],
    ['applied', d('applied'), 'as batches that returned reported it (a commit whose answer an outage lost is found done on the retry)'],
    ['duplicates skipped', d('duplicates'), `${d('replays')} replays after a checkpoint, the rest producer retries`],
    ['balances right', `${d('balancesMatching')}/${d('customers')}`, "each = the points of the customer's distinct events the hub holds"],
  ];
  return [['rewards (Event Hubs)', rows]];
}

/** Why "duplicates delivered" and "duplicates detected" differ, with this run's figures. */
export function duplicatesExplained(r: ChaosReport): string {
  return (
    `duplicates delivered (${r.duplicatesDelivered}) counts every delivery beyond a message's first: the producer's extra copies and the ` +
    `broker's redeliveries after crashes, lost acks, lock losses and abandons. duplicates detected (${r.duplicatesDetected}) counts only ` +
    `the deliveries that found the work already completed and were answered from its record. The rest did no work twice either: a ` +
    `redelivery after a crash before completion takes the claim over and finishes the same work once (lease and fencing), one that ` +
    `meets a claim still in progress is retried later, an abandoned one was never done, and status changes are idempotent by ` +
    `version. The proof that no duplicate took effect is "double charged" and the orders check, not the detected count.`
  );
}

/** The end-of-run report: the verdict first, the figures in aligned sections, then the invariants with their verdicts. */
export function formatReport(r: ChaosReport): string {
  const sections = reportSections(r);
  const all = sections.flatMap(([, rows]) => rows);
  const width = Math.max(...all.map(([k]) => k.length));
  // Values right-aligned in a column as wide as the usual figures; a longer one (a duration) pushes only its own note.
  const valueWidth = Math.min(8, Math.max(...all.map(([, v]) => String(v).length)));
  const lines: string[] = [];
  for (const [title, rows] of sections) {
    lines.push(`  ${title}`);
    for (const [k, v, note] of rows) lines.push(`    ${k.padEnd(width)}  ${String(v).padStart(valueWidth)}${note ? `   ${note}` : ''}`);
  }
  const dlq = r.deadLetteredMessages
    .slice(0, 5)
    .map((d) => `    DLQ ${d.queue} ${d.messageId} after ${d.deliveryCount} deliveries: ${d.reason} (${d.lastError})`);
  const verdict = r.ok ? ['  invariants: all hold'] : ['  INVARIANTS FAILED:', ...r.violations.slice(0, 20).map((v) => `    - ${v}`)];
  return [
    verdictLine(r),
    ledgerVerdictLine(r),
    `chaos run, seed ${r.seed}, ${(r.elapsedMs / 1000).toFixed(1)} s`,
    ...lines,
    ...dlq,
    ...wrapWords(duplicatesExplained(r), 110).map((l) => `  ${l}`),
    ...verdict,
  ].join('\n');
}

/** The time phase's lines of the table (none when it was off). */
function timePhaseRows(r: ChaosReport): Row[] {
  const t = r.timePhase;
  if (!t) return [['time phase', 'off', '--time-phase on to jump the clock past retention mid-run']];
  if (t.atElapsedMs < 0) return [['time phase', 'DID NOT RUN', 'the run timed out before it']];
  return [
    [
      'time phase: clock jump',
      `+${formatDuration(t.jumpedMs)}`,
      `after ${t.atCompleted} completed deliveries (${(t.atElapsedMs / 1000).toFixed(1)} s); retention + lease + 1 min`,
    ],
    ['time phase: expired at the jump', t.expiredAtJump, 'messages still queued or locked: past their time to live, dead-lettered'],
    [
      'time phase: swept',
      t.sweep.deleted,
      `records deleted with ${t.sweep.deletedLocalRows} local rows; scanned ${t.sweep.scanned}, skipped ${t.sweep.skipped}, ${t.sweep.requests} requests in ${t.sweep.runs} run(s), ${t.sweepMs} ms`,
    ],
    [
      'time phase: held records',
      t.sweepHold ? t.sweep.held : 'off',
      t.sweepHold
        ? `payments in the DLQ at the sweep: their records kept (${t.sweep.heldExtended} retention moved forward)`
        : "--sweep-hold off: the sweep deleted dead-lettered payments' records too",
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
