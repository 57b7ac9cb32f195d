import { IdempotencyError, StoreUnavailableError } from 'azure-functions-idempotency';
import type { ChargeResult } from './schema';

/**
 * The durable-timer retry arithmetic of the handoff run (src/payments/chargeOrchestration.ts): the provider's retry
 * budget and the record write's retry loop (the fallback when the charge activity could not write the record).
 */

/** How a handoff run retries transient provider failures: durable timers, doubling, within a budget. */
export interface RetryBudget {
  /** Total time from the first provider call after which no new round starts (`PAYMENT_RETRY_BUDGET_MINUTES`). */
  readonly budgetMs: number;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
  /**
   * How long a provider call announced on the record holds it (src/payments/callFence.ts `CALL_LEASE_MS` when absent):
   * a settle's look-up waits it out. Only the local rigs shorten it (their budgets are seconds).
   */
  readonly callLeaseMs?: number;
  /**
   * How much of its lease a call must have left when it sends the charge (src/config/callTiming.ts `postWindowMs`: the
   * POST's timeout, the provider's finish window, the look-up's lag and a margin); less left, the charge is not sent
   * and the round fails (retried). Absent (runs started before it existed, the local rigs): not checked.
   */
  readonly postWindowMs?: number;
}

/**
 * The record write's retries: durable timers, 1 s doubling to 5 min, for 7 days. A storage outage of minutes or
 * hours is ridden out inside the run (it never ends Failed for it); past 7 days the run fails and the reconciler
 * (src/app/paymentReconciler.ts) finds it, counts it and alerts.
 */
export const RECORD_WRITE_RETRY: RetryBudget = { budgetMs: 7 * 86_400_000, firstDelayMs: 1_000, maxDelayMs: 300_000 };

/** The record write failed for the whole {@link RECORD_WRITE_RETRY} budget (the run ends Failed: the reconciler takes it). */
export class RecordWriteBudgetError extends IdempotencyError {
  constructor(rounds: number, why: string) {
    super(`the record write failed for its whole retry budget (${rounds} tries): ${why}`.slice(0, 500), { retryable: false });
  }
}

/**
 * Record-write tries per execution of a run before it continues as new (`continueAsNew`): each try adds an activity
 * and a timer to the history (about 8 rows), which the worker replays whole at each timer, so 7 days of tries at the
 * 5 min cap (about 2,000) would be 12-16k rows. 20 tries keep the history under about 200 rows whatever the outage.
 */
export const RECORD_WRITE_ROUNDS_PER_EXECUTION = 20;

/** Where a record write stands when its run continues as new: in the next execution's input (`recordWrite`). */
export interface RecordWriteCarry {
  /** The result to write (the provider's answer, or the entity's). */
  readonly result: ChargeResult;
  /** When the first try began (the 7-day budget counts from it, across executions). */
  readonly startedMs: number;
  /** Tries made so far (the next delay doubles from it). */
  readonly round: number;
}

/** How a run rolls its record write over into a new execution: after `roundsPerExecution` tries in this one. */
export interface RecordWriteRollover {
  readonly roundsPerExecution: number;
  /** Continues the run as new with the write's position (the run then returns: its history starts again). */
  readonly continueAsNew: (at: { startedMs: number; round: number }) => void;
}

/**
 * The record write (`completeRecord`), retried on durable timers within `retry` (first, doubling, capped), from
 * `from` (a run continued as new) or from now. With `rollover`, after its tries in this execution it continues as new
 * and answers `continued` (the caller returns at once).
 */
export function* writeRecordWithin<Task>(
  write: () => Task,
  retry: RetryBudget,
  nowMs: () => number,
  timer: (atMs: number) => Task,
  from?: { readonly startedMs: number; readonly round: number },
  rollover?: RecordWriteRollover,
): Generator<Task, 'written' | 'continued', unknown> {
  const startedMs = from?.startedMs ?? nowMs();
  for (let round = from?.round ?? 0, here = 1; ; round++, here++) {
    try {
      yield write();
      return 'written';
    } catch (error) {
      const next = nowMs() + retryDelayMs(retry, round);
      if (next - startedMs > retry.budgetMs) throw new RecordWriteBudgetError(round + 1, error instanceof Error ? error.message : String(error));
      yield timer(next);
      if (rollover && here >= rollover.roundsPerExecution) {
        rollover.continueAsNew({ startedMs, round: round + 1 });
        return 'continued';
      }
    }
  }
}

/** The delay before retry round `round + 1` (0-based): first, doubling, capped. */
export function retryDelayMs(retry: RetryBudget, round: number): number {
  return Math.min(retry.maxDelayMs, retry.firstDelayMs * 2 ** Math.min(round, 30));
}

/** The waits before a call's record write is tried again inside its activity (see {@link writeWhileCallLeased}). */
export const CALL_WRITE_RETRY_DELAYS_MS: readonly number[] = [1_000, 2_000, 4_000];

/**
 * A call's record write, tried again inside the activity after 1, 2 and 4 s while the call's lease has the wait left,
 * when the store did not answer (`StoreUnavailableError`; anything else is thrown at once). The answer may exist
 * nowhere else: the engine's copy of a round (run again after its answer was delivered) answers a run that no longer
 * listens, and a provider whose key memory keeps only successes does not replay a decline (simulator seed 14559).
 * Safe to repeat: the write is fenced by the claim's attempt, and a record settled meanwhile refuses it.
 */
export async function writeWhileCallLeased<T>(write: () => Promise<T>, leaseLeftMs: () => number, sleep: (ms: number) => Promise<void>): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await write();
    } catch (error) {
      const delayMs = CALL_WRITE_RETRY_DELAYS_MS[retry];
      if (!(error instanceof StoreUnavailableError) || delayMs === undefined || leaseLeftMs() <= delayMs) throw error;
      await sleep(delayMs);
    }
  }
}
