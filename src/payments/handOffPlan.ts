import type { Claim } from 'azure-functions-idempotency';
import { RECORD_WRITE_ROUNDS_PER_EXECUTION, type RecordWriteCarry, type RecordWriteRollover, type RetryBudget } from './recordWriteRetry';
import type { ChargeResult } from './schema';

/** The handoff run's plan: what the delivery hands the run (src/payments/chargeOrchestration.ts runs it). */
/**
 * The handoff run's step sequence the starters write today. 2: the charge activity writes the record (one try) and
 * the entity hears `complete`/`fail` as a one-way signal (6 messages a payment). Absent or 1: a run started before
 * version 2 was deployed keeps the sequence its history holds (`complete` as a call, then `completePaymentRecord`).
 */
export const HANDOFF_VERSION = 2;

/** What the delivery hands to the run: the claim it completes the record with, and the retry budget. */
export interface HandOffPlan {
  /** The run's step sequence ({@link HANDOFF_VERSION}); absent: version 1 (runs started before it existed). */
  readonly version?: number;
  /** The claim that started this run: its attempt fences the record write (`completeRecord`). */
  readonly claim: Claim;
  readonly retry: RetryBudget;
  /** How the record write is retried while the store does not answer (default {@link RECORD_WRITE_RETRY}; tests pass shorter). */
  readonly recordRetry?: RetryBudget;
  /**
   * Record-write tries per execution before the run continues as new ({@link RECORD_WRITE_ROUNDS_PER_EXECUTION}).
   * Absent (runs started before it existed): no rollover, so their replays stay as their history has them.
   */
  readonly recordRoundsPerExecution?: number;
  /**
   * A run whose budget is spent while a call may have charged settles it with one last call (look up, or hold for an
   * operator) instead of recording `failed` (src/payments/chargeOrchestration.ts `chargeWithinBudget`). Absent (runs
   * started before it existed): `failed`, so their replays stay as their history has them.
   */
  readonly settleUncertain?: boolean;
  /**
   * Settle tries before the payment is held: a settle waits out the lease of every provider call announced on the record
   * (src/payments/callFence.ts) and is tried again after one while a call may be on its way or the store does not
   * answer. Absent (runs started before it existed): one try, as their history has it.
   */
  readonly settleTries?: number;
}

/** Settle tries of the plans handed out today: about a quarter of an hour of a store fault or of a late copy's call. */
export const SETTLE_TRIES = 5;

/** The plan the starters (the trigger, the operator's retry, the reconciler) hand a run today. */
export function handOffPlan(claim: Claim, retry: RetryBudget): HandOffPlan {
  return {
    version: HANDOFF_VERSION,
    claim,
    retry,
    recordRoundsPerExecution: RECORD_WRITE_ROUNDS_PER_EXECUTION,
    settleUncertain: true,
    settleTries: SETTLE_TRIES,
  };
}

/**
 * The record write's rollover into a new execution, when the plan asks for it and the run can continue as new: the
 * next execution's input is the run's own with the write's position (`recordWrite`).
 */
export function rolloverOf<Input extends object>(
  input: Input,
  plan: HandOffPlan,
  continueAsNew: ((next: Input & { recordWrite: RecordWriteCarry }) => void) | undefined,
  result: ChargeResult,
): RecordWriteRollover | undefined {
  if (!continueAsNew || !plan.recordRoundsPerExecution) return undefined;
  return {
    roundsPerExecution: plan.recordRoundsPerExecution,
    continueAsNew: (at) => continueAsNew({ ...input, recordWrite: { result, ...at } }),
  };
}
