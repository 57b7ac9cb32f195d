import { LeaseLostError, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import { finishedPaymentRow } from './paymentRow';
import type { ChargeResult, PaymentRequested } from './schema';

/** Input of the `completePaymentRecord` activity: the claim that started the run, the run's result, the payment. */
export interface CompleteRecordInput {
  readonly claim: Claim;
  readonly result: ChargeResult;
  readonly payment: PaymentRequested;
  /**
   * Write only on the version of the record `claim` names (an exact completion): a change since refuses it with
   * `LeaseLostError` (thrown, not `fenced`). The settle's "no charge found" (src/app/durableCharge.ts); never set by a run.
   */
  readonly exact?: boolean;
}

/** What the activity did: wrote the record, or found it taken over by a newer attempt (left alone). */
export type CompleteRecordOutcome = 'completed' | 'fenced';

/**
 * What the `chargeProvider` activity answers when it writes the record too (handoff version 2): the provider's answer
 * and the one record-write try: `completed`, `fenced` (a newer attempt owns the record: left alone), `unwritten` (the
 * store did not answer: the run writes it on durable timers). Absent: not tried (version 1 runs).
 */
export interface RecordedCharge {
  readonly result: ChargeResult;
  readonly record?: CompleteRecordOutcome | 'unwritten';
}

/**
 * The handoff run's record write: the dedup record `COMPLETED` with the result and the Payment row with its
 * outcome, in one Table transaction, conditional on the claim (`If-Match`; a renewal of the same claim is
 * written through, see the store). Fenced by attempt: when a newer attempt took the record over, the store
 * refuses (`LeaseLostError`) and nothing is written: the newer attempt's delivery or run completes it.
 * Idempotent: the same completion again (an activity runs at least once) resolves as done.
 * @throws StoreUnavailableError (retryable: the activity is retried by the engine)
 */
export async function completeRecord(store: IdempotencyStore, input: CompleteRecordInput): Promise<CompleteRecordOutcome> {
  try {
    await store.complete(input.claim, input.result, [finishedPaymentRow(input.payment, input.result)], input.exact ? { exact: true } : undefined);
    return 'completed';
  } catch (error) {
    if (error instanceof LeaseLostError && !input.exact) return 'fenced';
    throw error;
  }
}
