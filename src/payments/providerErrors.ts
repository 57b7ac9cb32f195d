import { IdempotencyError } from 'azure-functions-idempotency';

/** The provider client's errors: what a call's answer means when it is not a result (PaymentProviderClient.ts). */

/** A provider failure worth retrying with the same `Idempotency-Key` (5xx, 409 in flight, timeouts, network). */
export class TransientProviderError extends IdempotencyError {
  constructor(
    message: string,
    readonly statusCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, { cause: options?.cause, retryable: true });
  }
}

/**
 * The provider answered a look-up with 400, 404, 405 or 501: it has no such look-up. A configuration problem
 * (`PAYMENT_PROVIDER_LOOKUP` declares one the provider does not offer), never retried: the payment is held for an
 * operator and the problem reported (`payments.provider.lookup_unsupported`, an error log once per process).
 */
export class LookupUnsupportedError extends IdempotencyError {
  constructor(readonly statusCode: number) {
    super(`payment provider answered ${statusCode} to a charge look-up: it offers no look-up by key (PAYMENT_PROVIDER_LOOKUP is wrong)`, {
      retryable: false,
    });
  }
}

/**
 * The provider's look-up lists a charge under the key that is not final yet (Stripe `processing`, Adyen `Received`,
 * PayPal capture `PENDING`): a call in flight, never "no charge". Retryable: the run looks again later.
 */
export class ChargeInFlightError extends TransientProviderError {
  constructor(
    readonly chargeId: string,
    statusCode?: number,
  ) {
    super(`payment provider lists a charge under the key that is not final yet (${chargeId}): a call in flight, not "none"`, statusCode);
  }
}

/**
 * An answer that is not the provider's word about this key: it came from a layer before the provider's idempotency
 * (401 a rotated secret, 403, 404 a wrong URL or a proxy during a deploy, 405, 429 a rate limiter, a 400 or 422 without
 * the provider's error body). Stripe: "results are saved only after the execution of an endpoint begins"; such an
 * answer can reply to a retry of a key that did charge. Never a result: retried within the budget, then settled by
 * look-up or held; counted by status (`payments.provider.refused`) so a wave of them pages at once.
 */
export class ProviderRefusedError extends TransientProviderError {
  constructor(statusCode: number, why: string) {
    super(`payment provider answered ${statusCode} before its idempotency (${why}): not a result for this key`, statusCode);
  }
}

/** Statuses that say "no such look-up" rather than "try again". */
export const LOOKUP_UNSUPPORTED = new Set([400, 404, 405, 501]);

/**
 * The provider answered the charge list with 404, 405 or 501: it offers no list by time window (Adyen: reports only).
 * A configuration problem (`PAYMENT_PROVIDER_LEDGER=list` declares one it does not offer), never retried by the tick.
 */
export class ChargeListUnsupportedError extends IdempotencyError {
  constructor(readonly statusCode: number) {
    super(`payment provider answered ${statusCode} to the charge list: it offers no list of charges by time (PAYMENT_PROVIDER_LEDGER=list is wrong)`, {
      retryable: false,
    });
  }
}
