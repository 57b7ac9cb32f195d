import { StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { type ExpirySweeper } from 'azure-functions-idempotency/table';
import { emptyPartSweep, type PartSweepReport } from './part';
import type { LogicalMessage } from './paymentsWorkload';

/** A delivery of a payment held for an operator, before the operator's fix (the time phase's jump). */
export class HeldForOperatorError extends Error {
  constructor(paymentId: string, what: string) {
    super(`payment ${paymentId} is held for an operator: ${what}`);
    this.name = 'HeldForOperatorError';
  }
}

/** The time phase as the payments part saw it. */
export interface PaymentsPhaseState {
  ran: boolean;
  readonly withheldReuses: Set<number>;
}

/** Payments held for an operator (time phase): their deliveries fail until the fix, `afterCharge` ones after one charge. */
export class HeldPayments {
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
export async function sweepToTheEnd(sweeper: ExpirySweeper): Promise<PartSweepReport> {
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
