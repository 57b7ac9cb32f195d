import { IdempotencyError, keyFromMessageId, RecordStatus, type IdempotencyRecord, type ReopenableStore, payloadDigest } from 'azure-functions-idempotency';
import { chargeEntityKey, chargeInstanceId, type WorkflowStatus } from '../payments/ChargeWorkflow';
import { handOffPlan, type ChargeOrchestrationInput, type RetryBudget } from '../payments/chargeOrchestration';
import type { ProviderCapability } from '../payments/providerLookup';
import { PAYMENT_ROW, paymentRow } from '../payments/paymentRow';
import { DEFAULT_PROVIDER, PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';
import { PaymentRequestedSchema, type ChargeResult } from '../payments/schema';

/** The operator's retry was refused; the message says why and what to do. Nothing was changed. */
export class PaymentRetryRefusedError extends IdempotencyError {
  constructor(message: string) {
    super(message, { retryable: false });
  }
}

/**
 * True for a record this retry may reopen: the payments consumer's, completed with a `failed` charge. Every
 * store the app builds keeps such records out of its completed-key cache (`cacheable` in `stores.ts`): a reopened
 * record's cached copy would answer a duplicate with the old failure.
 */
export function reopenableByRetry(record: Pick<IdempotencyRecord, 'consumer' | 'status' | 'result'>): boolean {
  return record.consumer === PAYMENTS_CONSUMER && record.status === RecordStatus.Completed && (record.result as ChargeResult | undefined)?.status === 'failed';
}

export interface PaymentRetryDeps {
  /** The payments consumer's store (`IDEMPOTENCY_STORE`: Table or Cosmos; `consumerStoreFromSettings`). */
  readonly store: ReopenableStore;
  /** Starts the charge orchestration (Durable's HTTP API, or a local backend's). */
  readonly start: (instanceId: string, input: ChargeOrchestrationInput) => Promise<'started' | 'running'>;
  readonly retry: RetryBudget;
  /** The provider's capability for the new run (default the settings' defaults): the failed run's entity makes its first call uncertain. */
  readonly provider?: ProviderCapability;
  /** Epoch ms now (default `Date.now`): the key's age is measured from the record's creation. */
  readonly nowMs?: () => number;
  /**
   * The operator checked at the provider what the key charged (a payment held for an operator): the run treats the
   * key as fresh (age 0) and calls the provider with it, instead of being held again.
   */
  readonly checkedAtProvider?: boolean;
  /**
   * The reconciler's takeover: only the record as it listed it, still in progress (same ETag). A record that changed
   * since (completed by its run, `failed` included, or taken over) is refused, never reopened: only an operator
   * reopens a settled payment.
   */
  readonly listed?: IdempotencyRecord;
  /**
   * The run's status (Durable's, through `ChargeWorkflow.status`): a payment whose lifetime's run is still running,
   * pending or suspended is refused, whatever its record says (that run would refuse the new start and the record would
   * be left claimed with nothing running; an operator resumes or terminates the run first, the reconciler takes a
   * terminated run over). Absent: not checked (the reconciler, which lists only records whose run ended).
   */
  readonly status?: (instanceId: string) => Promise<WorkflowStatus>;
  /** Who restarts the run, for its correlation id `<origin>-<paymentId>` (default `operator-retry`; the reconciler's `reconciler`). */
  readonly origin?: string;
}

export interface PaymentRetryReport {
  readonly paymentId: string;
  readonly instanceId: string;
  /** The attempt of the new run (the record's, after the operator's takeover). */
  readonly attempt: number;
  /** Why it had failed (the record's result), or what state the record was found in. */
  readonly previous: string;
  readonly started: 'started' | 'running';
}

/**
 * The operator's retry of a payment that ended `failed` (handoff design: the provider's transient failures
 * outlasted the retry budget), on either store (Table or Cosmos: `ReopenableStore`). The record is reopened
 * (`COMPLETED` -> `RELEASED`, `If-Match` on the ETag read), claimed again (attempt + 1, Payment row back to
 * `pending`, one transaction) and the lifetime's orchestration started with that claim: a new run of the same
 * instance id, the same `Idempotency-Key`, so a charge the provider made on a call whose answer was lost is
 * replayed, never made twice. Run again after a crash: a record left `RELEASED`, or
 * `IN_PROGRESS` past its lease without a running orchestration, is taken over the same way.
 * @throws PaymentRetryRefusedError when there is no such record, or it did not fail (succeeded, declined,
 *   rejected: never retried), or it changed meanwhile; StoreUnavailableError when the store does not answer.
 */
export async function retryFailedPayment(deps: PaymentRetryDeps, paymentId: string): Promise<PaymentRetryReport> {
  const { store } = deps;
  const key = keyFromMessageId(PAYMENTS_CONSUMER, paymentId);
  const record = await store.get(key);
  if (!record) throw new PaymentRetryRefusedError(`payment ${paymentId} has no record (never received, or swept after its retention): nothing to retry`);
  const result = record.result as ChargeResult | undefined;
  if (deps.listed && (record.status !== RecordStatus.InProgress || record.etag !== deps.listed.etag)) {
    throw new PaymentRetryRefusedError(
      `payment ${paymentId} changed since it was listed in progress (now ${record.status}, attempt ${record.attempt}): left alone`,
    );
  }
  if (record.status === RecordStatus.Completed && !reopenableByRetry(record)) {
    throw new PaymentRetryRefusedError(`payment ${paymentId} did not fail (${result?.status ?? 'no result'}): only a failed payment is retried`);
  }
  if (deps.status) {
    const instanceId = chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
    if ((await deps.status(instanceId)).state === 'running')
      throw new PaymentRetryRefusedError(
        `payment ${paymentId} (${record.status}): its run ${instanceId} is still running, pending or suspended, and would refuse a new start: resume or terminate it first (the reconciler takes a terminated run over)`,
      );
  }
  const row = await store.readLocalRow(key, PAYMENT_ROW);
  const parsed = PaymentRequestedSchema.safeParse({ paymentId, customerId: row?.customerId, amount: row?.amount, currency: row?.currency });
  if (!parsed.success || payloadDigest(parsed.data) !== record.digest) {
    throw new PaymentRetryRefusedError(`payment ${paymentId}: its Payment row is missing or does not match the record's digest; resubmit its message instead`);
  }
  const previous = result?.status === 'failed' ? `failed: ${result.reason}` : `${record.status} (attempt ${record.attempt})`;
  if (record.status === RecordStatus.Completed) {
    const reopened = await store.reopen(record, `operator retry; it had ${previous}`);
    if (reopened.kind === 'changed') throw new PaymentRetryRefusedError(`payment ${paymentId} changed meanwhile; run the command again`);
  }
  const claimedAtMs = (deps.nowMs ?? Date.now)();
  const outcome = await store.claim(key, record.digest, { effects: [paymentRow(parsed.data, 'pending')] });
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') {
    throw new PaymentRetryRefusedError(
      `payment ${paymentId} is ${outcome.kind === 'inProgress' ? 'in progress (its lease has not lapsed)' : outcome.kind}: not retried`,
    );
  }
  const { claim } = outcome;
  const entityKey = chargeEntityKey(claim.recordId, claim.createdAtMs, claim.digest);
  const instanceId = chargeInstanceId(entityKey);
  const started = await deps.start(instanceId, {
    idempotencyKey: paymentId,
    entityKey,
    digest: claim.digest,
    attempt: claim.attempt,
    payment: parsed.data,
    correlationId: `${deps.origin ?? 'operator-retry'}-${paymentId}`,
    handoff: handOffPlan(claim, deps.retry),
    provider: deps.provider ?? DEFAULT_PROVIDER,
    keyAgeAtStartMs: deps.checkedAtProvider ? 0 : Math.max(0, (deps.nowMs ?? Date.now)() - claim.createdAtMs),
    keyOriginMs: deps.checkedAtProvider ? (deps.nowMs ?? Date.now)() : claim.createdAtMs,
    // A claim created now is a new generation: a record past its retention taken over (attempt > 1), or one the sweep
    // deleted between the read above and the claim (attempt 1). Either way the key was used before it, at any time;
    // its origin says nothing of the key's age at the provider.
    ...(claim.createdAtMs >= claimedAtMs && !deps.checkedAtProvider ? { keyUsedBefore: true } : {}),
  });
  return { paymentId, instanceId, attempt: claim.attempt, previous, started };
}
