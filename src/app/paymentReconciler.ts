import type { Clock, IdempotencyRecord } from 'azure-functions-idempotency';
import { chargeEntityKey, chargeInstanceId } from '../payments/ChargeWorkflow';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';
import { PaymentRetryRefusedError } from './paymentRetry';

/**
 * The payments reconciler (handoff design; docs/lifecycle.md "Reconciling runs that ended without their record").
 * Once a delivery is acknowledged its run owns the record, and no new delivery comes to notice a run that ended
 * without completing it. Each expiry timer tick, before Durable's purge, this finds the payments records still in
 * progress well past their lease whose `chargePayment` run is not going on, and resolves each the safe way: a new
 * run of the same instance under a takeover (attempt + 1), whose entity `begin` decides: completed -> the record is
 * completed from the entity's result (no provider call); in progress, failed or idle (purged) -> `uncertain`, so
 * the run looks the charge up (or holds it) before any charge. Never a blind charge. Each one is counted
 * (`payments.reconciled`, by reason; alert `payments-reconciled`) and logged with its key and reason.
 */

/** A charge run as the task hub tells it (Pending counts as running: its start message is in the hub). */
export type RunState = 'running' | 'suspended' | 'completed' | 'failed' | 'terminated' | 'missing';

/**
 * How long a payments record may stay in progress, its run still Running, Pending or Suspended, before the reconciler
 * alerts on it (`payments.run_stuck`, an error log naming the key, each tick): twice the default retry budget. A run
 * suspended by an operator and forgotten, or one retrying its record write for hours, is not taken over (it can
 * still act) but is never left in silence.
 */
export const RUN_STUCK_AFTER_MS = 2 * 60 * 60_000;

/** Why a record was reconciled: its run failed, was terminated, is not in the task hub, or completed without writing it. */
export type ReconcileReason = 'run-failed' | 'run-terminated' | 'run-missing' | 'run-completed-record-open';

/**
 * How long after its lease lapsed an in-progress record must stay so before its run is read: a delivery that
 * claimed and has not started its run yet (or a redelivery about to take it over) is left to finish that first.
 */
export const RECONCILE_GRACE_MS = 5 * 60_000;

/** What to do about an in-progress record, past the grace, whose run is in `run`: nothing while it runs. */
export function reconcileReasonOf(run: RunState): ReconcileReason | undefined {
  switch (run) {
    case 'running':
    case 'suspended':
      return undefined;
    case 'failed':
      return 'run-failed';
    case 'terminated':
      return 'run-terminated';
    case 'missing':
      return 'run-missing';
    case 'completed':
      // A completed run writes its record before it ends, unless fenced by a newer attempt that then never ran.
      return 'run-completed-record-open';
  }
}

export interface ReconcileDeps {
  /** The payments records in progress whose lease lapsed before now - {@link RECONCILE_GRACE_MS} (`lapsedInProgressRecords`). */
  readonly records: (lapsedBeforeMs: number) => AsyncIterable<IdempotencyRecord>;
  /** The state of a charge run in the task hub. */
  readonly runState: (instanceId: string) => Promise<RunState>;
  /**
   * Takes the record over, only as listed (still in progress, same ETag), and starts its run again
   * (`retryFailedPayment` with `listed`); returns the new attempt. A record settled meanwhile is refused, never reopened.
   */
  readonly restart: (record: IdempotencyRecord) => Promise<{ attempt: number }>;
  readonly telemetry: Telemetry;
  readonly clock: Clock;
  readonly budgetMs: number;
  /**
   * Keeps the records of runs still going alive (their retention moved on, as the sweep's hold does): a run suspended
   * for days, or retrying its record write, must not see its record swept or taken for expired by a claim. Called
   * once a pass with the records found in progress whose run is Running, Pending or Suspended.
   */
  readonly keepAlive?: (records: readonly IdempotencyRecord[]) => Promise<void>;
}

export interface ReconcileReport {
  /** Records in progress past the grace that were read. */
  readonly scanned: number;
  /** Of those, whose run goes on (left alone). */
  readonly running: number;
  /** Of those running, in progress longer than {@link RUN_STUCK_AFTER_MS} (alerted). */
  readonly stuck: number;
  /** Restarted under a takeover, with why and the new attempt. */
  readonly resolved: ReadonlyArray<{ readonly paymentId: string; readonly reason: ReconcileReason; readonly attempt: number }>;
  /** Found but not restarted: the record changed meanwhile (a delivery took it), or the restart was refused. */
  readonly refused: number;
  readonly stoppedByBudget: boolean;
}

/**
 * One reconciler pass within `budgetMs`. A record the restart refuses (it changed meanwhile, or its Payment row
 * does not match) is logged as a warning and counted as `refused`; it is read again on the next tick.
 * @throws StoreUnavailableError, StoreRequestError, or the task hub's read error (the tick fails; the next resumes)
 */
export async function reconcilePayments(deps: ReconcileDeps): Promise<ReconcileReport> {
  const { clock, telemetry } = deps;
  const deadline = clock.nowMs() + deps.budgetMs;
  let scanned = 0;
  let running = 0;
  let refused = 0;
  let stuck = 0;
  const live: IdempotencyRecord[] = [];
  const resolved: Array<{ paymentId: string; reason: ReconcileReason; attempt: number }> = [];
  const report = (stoppedByBudget: boolean): ReconcileReport => ({ scanned, running, stuck, resolved, refused, stoppedByBudget });
  const stopped = async (): Promise<ReconcileReport> => {
    await deps.keepAlive?.(live);
    // Not a log line only: a reconciler that never finishes a pass may never reach some partitions (alert on it).
    telemetry.count(MetricNames.reconcilerIncomplete, { consumer: 'payments' });
    telemetry.log('warn', `payments reconciler: budget spent after ${scanned} record(s); the next tick goes on from there`, {
      consumer: 'payments',
      outcome: 'reconcile-incomplete',
    });
    return report(true);
  };
  for await (const record of deps.records(clock.nowMs() - RECONCILE_GRACE_MS)) {
    if (clock.nowMs() >= deadline) return await stopped();
    scanned++;
    const instanceId = chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
    const run = await deps.runState(instanceId);
    const reason = reconcileReasonOf(run);
    if (!reason) {
      running++;
      live.push(record);
      const forMs = clock.nowMs() - record.updatedAtMs;
      if (forMs > RUN_STUCK_AFTER_MS) {
        stuck++;
        telemetry.count(MetricNames.paymentsRunStuck, { consumer: record.consumer, run });
        telemetry.log(
          'error',
          `payments: ${record.key} in progress for ${Math.round(forMs / 60_000)} min, its run ${run}: look at the run (resume it, or terminate it: the reconciler then takes it over)`,
          {
            consumer: record.consumer,
            idempotencyKey: record.key,
            outcome: 'run-stuck',
            instanceId,
            reason: run,
          },
        );
      }
      continue;
    }
    const fields = { consumer: record.consumer, idempotencyKey: record.key, reason, outcome: 'reconciled', instanceId };
    try {
      const { attempt } = await deps.restart(record);
      resolved.push({ paymentId: record.key, reason, attempt });
      telemetry.count(MetricNames.paymentsReconciled, { consumer: record.consumer, reason });
      telemetry.log('error', `payments: reconciled ${record.key} (${reason}): run restarted as attempt ${attempt}; its entity decides, never a blind charge`, {
        ...fields,
        attempt,
        previousAttempt: record.attempt,
      });
    } catch (error) {
      if (!(error instanceof PaymentRetryRefusedError)) throw error;
      refused++;
      telemetry.log('warn', `payments: reconciler left ${record.key} (${reason}): ${error.message}`, { ...fields, outcome: 'reconcileRefused' });
    }
  }
  await deps.keepAlive?.(live);
  return report(false);
}
