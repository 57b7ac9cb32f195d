import { LeaseLostError, StoreRequestError, StoreUnavailableError, type IdempotencyStore } from 'azure-functions-idempotency';
import { alarmIfSettledOtherwise } from '../payments/lateSuccess';
import { completeRecord, type CompleteRecordInput, type CompleteRecordOutcome } from '../payments/completeRecord';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';

/** The handoff run's record write, one try, with the reports an operator is alerted by (src/app/durableCharge.ts uses it). */

/**
 * One try of the record write ({@link completeRecord}); a failed payment written is counted and logged; a store that
 * does not answer is logged (warn: the run retries; unless `warn` is false: the caller tries again first) and thrown.
 */
export async function writeRecordOnce(
  store: IdempotencyStore,
  telemetry: () => Telemetry,
  recordInput: CompleteRecordInput,
  warn = true,
): Promise<CompleteRecordOutcome> {
  let outcome;
  try {
    outcome = await completeRecord(store, recordInput);
  } catch (error) {
    // An exact write refused (the record changed since it was read): the caller decides, nothing to report.
    if (error instanceof LeaseLostError) throw error;
    // Its answer lost, the write may be on record: a failure is alerted now (a run that dies before its next try, or
    // a settle that then finds the record written, would otherwise leave it unnamed: simulator seed 1853).
    if (mayHaveLanded(error)) reportFailed(telemetry, recordInput);
    // The store did not answer: the run calls again after a durable timer (RECORD_WRITE_RETRY); say so once a try.
    const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (error instanceof StoreRequestError) {
      // Refused (403 after a role change, 404 for a deleted table, 400 from a bug): no wait fixes it, an operator
      // does. The customer may be charged already: alert at once, keep retrying (the fix lets the next try land).
      const t = telemetry();
      t.count(MetricNames.recordWriteRefused, { consumer: 'payments', statusCode: error.statusCode ?? 0 });
      t.log('error', `payments: the record write was refused (${why}); the run retries it until the store is fixed`.slice(0, 500), {
        consumer: 'payments',
        outcome: 'record-write-refused',
        idempotencyKey: recordInput.claim.key.key,
        attempt: recordInput.claim.attempt,
        statusCode: error.statusCode,
      });
      throw error;
    }
    if (warn) warnRecordWriteRetry(telemetry, recordInput, error);
    throw error;
  }
  if (outcome === 'completed') reportFailed(telemetry, recordInput);
  if (outcome === 'fenced' && recordInput.result.status === 'succeeded') await alarmIfSettledOtherwise(store, telemetry(), recordInput);
  return outcome;
}

/** A record write the store did not answer: a warning with the key and the error (the run tries it again). */
export function warnRecordWriteRetry(telemetry: () => Telemetry, recordInput: CompleteRecordInput, error: unknown): void {
  const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  telemetry().log('warn', `payments: record write failed, the run retries it (${why})`.slice(0, 500), {
    consumer: 'payments',
    outcome: 'recordWriteRetry',
    idempotencyKey: recordInput.claim.key.key,
    attempt: recordInput.claim.attempt,
  });
}

/** A store error that says the write may have landed (its answer was lost). */
export function mayHaveLanded(error: unknown): boolean {
  return error instanceof StoreUnavailableError && error.writeMayHaveLanded === true;
}

/** A payment recorded `failed` (held included): counted in `payments.failed` and logged as an error with its key. */
function reportFailed(telemetry: () => Telemetry, recordInput: CompleteRecordInput): void {
  const result = recordInput.result;
  if (result.status !== 'failed') return;
  const t = telemetry();
  t.count(MetricNames.paymentsFailed, { consumer: 'payments' });
  t.log('error', `payments: failed (${result.reason})`, {
    consumer: 'payments',
    outcome: 'failed',
    idempotencyKey: recordInput.claim.key.key,
    attempt: recordInput.claim.attempt,
    reason: result.reason,
  });
}
