import { IdempotencyError } from 'azure-functions-idempotency';

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

/** The record write (`completeRecord`), retried on durable timers within `retry` (first, doubling, capped). */
export function* writeRecordWithin<Task>(
  write: () => Task,
  retry: RetryBudget,
  nowMs: () => number,
  timer: (atMs: number) => Task,
): Generator<Task, void, unknown> {
  const startedMs = nowMs();
  for (let round = 0; ; round++) {
    try {
      yield write();
      return;
    } catch (error) {
      const next = nowMs() + retryDelayMs(retry, round);
      if (next - startedMs > retry.budgetMs) throw new RecordWriteBudgetError(round + 1, error instanceof Error ? error.message : String(error));
      yield timer(next);
    }
  }
}

/** The delay before retry round `round + 1` (0-based): first, doubling, capped. */
export function retryDelayMs(retry: RetryBudget, round: number): number {
  return Math.min(retry.maxDelayMs, retry.firstDelayMs * 2 ** Math.min(round, 30));
}
