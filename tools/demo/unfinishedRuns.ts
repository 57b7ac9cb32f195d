import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';

/**
 * Lost or unfinished at verification: a handed-off payment whose record has no result is either **lost** (its run is
 * final, or there is none, and nobody will ever complete it) or **unfinished** (its charge run is still Pending or
 * Running when the checks read the stores: the rig's drain gave up on a starved machine). The second proves nothing
 * either way; the verdict names it apart from lost (docs/demo-run.md, "Verdict first").
 */

/** Instance id -> the run's runtime status (`Pending`, `Running`, ...), for the runs not final at verification. */
export type UnfinishedRuns = ReadonlyMap<string, string>;

/** A payment's run still going at verification. */
export interface UnfinishedRun {
  readonly instanceId: string;
  readonly runtimeStatus: string;
}

/**
 * The still-going run among a message's handoff acknowledgements (`handedOff`, `inProgress`), if any.
 * @example unfinishedRunOf([{ outcome: 'handedOff', instanceId: 'payment-a', ... }], new Map([['payment-a', 'Running']]))
 *   // { instanceId: 'payment-a', runtimeStatus: 'Running' }
 */
export function unfinishedRunOf(results: readonly PaymentDeliveryResult[], runs: UnfinishedRuns): UnfinishedRun | undefined {
  for (const r of results) {
    if (r.outcome !== 'handedOff' && r.outcome !== 'inProgress') continue;
    const runtimeStatus = runs.get(r.instanceId);
    if (runtimeStatus !== undefined) return { instanceId: r.instanceId, runtimeStatus };
  }
  return undefined;
}

/** True when `r` is a handoff acknowledgement whose run was still going at verification. */
export function isUnfinishedAck(r: PaymentDeliveryResult, runs: UnfinishedRuns): boolean {
  return (r.outcome === 'handedOff' || r.outcome === 'inProgress') && runs.has(r.instanceId);
}

/** `#12 charge pay-7 (run payment-pay-7-..., Running)`: a message unfinished at verification, with its run's status. */
export function unfinishedLabel(label: string, run: UnfinishedRun): string {
  return `${label} (run ${run.instanceId}: ${run.runtimeStatus})`;
}

/** `2 Running, 1 Pending`: the runs' statuses, most frequent first, from labels made by {@link unfinishedLabel}. */
export function statusesOf(labels: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const l of labels) {
    const status = /: (\w+)\)$/.exec(l)?.[1] ?? 'unknown';
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
}
