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

/**
 * Why a record was reconciled: its run failed, was terminated, is not in the task hub, or completed without writing
 * it; or (`run-superseded`, not an incident) it completed under an older attempt than the record's, its write fenced.
 */
export type ReconcileReason = 'run-failed' | 'run-terminated' | 'run-missing' | 'run-completed-record-open' | 'run-superseded';

/**
 * Reasons that are not an incident: counted (`payments.reconciled`) and logged as a warning, left out of the
 * `payments-reconciled` alert. `run-superseded`: a start the task hub accepted and dropped (its start is
 * check-then-act: two starts of one instance id can both pass the check and the first input stays), or a start that
 * timed out and landed after the delivery took its own record over. The run that went on had the older attempt: its
 * activity's fence stopped it before the provider (or, taken over after the call, its record write was fenced). The
 * restart's entity decides as for any takeover (a recorded result completes the record; otherwise key memory or
 * look-up), so the payment settles within a tick or two of the grace.
 */
export const ROUTINE_RECONCILE_REASONS: ReadonlySet<ReconcileReason> = new Set(['run-superseded']);

/**
 * How long after its lease lapsed an in-progress record must stay so before its run is read: a delivery that
 * claimed and has not started its run yet (or a redelivery about to take it over) is left to finish that first.
 */
export const RECONCILE_GRACE_MS = 5 * 60_000;

/** A completed run started with an older attempt than the record's is `run-superseded`; any other reason stays. */
async function supersededOr(
  reason: ReconcileReason | undefined,
  record: IdempotencyRecord,
  instanceId: string,
  deps: ReconcileDeps,
): Promise<ReconcileReason | undefined> {
  if (reason !== 'run-completed-record-open' || !deps.runAttempt) return reason;
  const runAttempt = await deps.runAttempt(instanceId);
  return runAttempt !== undefined && runAttempt < record.attempt ? 'run-superseded' : reason;
}

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
   * The attempt a completed run was started with (its input's `attempt`), read only for a completed run whose record
   * is still open: below the record's attempt, the run was superseded (`run-superseded`). Absent or undefined: not known.
   */
  readonly runAttempt?: (instanceId: string) => Promise<number | undefined>;
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
  let oldestCreatedMs: number | undefined;
  /** The age of the oldest record still in progress this pass read (the dashboard's and the alert's one number). */
  const recordOldest = () => {
    const minutes = oldestCreatedMs === undefined ? 0 : Math.max(0, Math.round((clock.nowMs() - oldestCreatedMs) / 60_000));
    telemetry.record(MetricNames.oldestInProgressMinutes, minutes, { consumer: 'payments' });
  };
  const stopped = async (): Promise<ReconcileReport> => {
    recordOldest();
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
    oldestCreatedMs = Math.min(oldestCreatedMs ?? record.createdAtMs, record.createdAtMs);
    const instanceId = chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
    const run = await deps.runState(instanceId);
    const reason = await supersededOr(reconcileReasonOf(run), record, instanceId, deps);
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
      const routine = ROUTINE_RECONCILE_REASONS.has(reason);
      const why = routine ? `its run was started with an older attempt than the record's (a duplicate start dropped) and was fenced: not an incident; ` : '';
      telemetry.log(
        routine ? 'warn' : 'error',
        `payments: reconciled ${record.key} (${reason}): ${why}run restarted as attempt ${attempt}; its entity decides, never a blind charge`,
        {
          ...fields,
          attempt,
          previousAttempt: record.attempt,
        },
      );
    } catch (error) {
      if (!(error instanceof PaymentRetryRefusedError)) throw error;
      refused++;
      telemetry.log('warn', `payments: reconciler left ${record.key} (${reason}): ${error.message}`, { ...fields, outcome: 'reconcileRefused' });
    }
  }
  recordOldest();
  await deps.keepAlive?.(live);
  return report(false);
}
