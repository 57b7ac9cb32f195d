import { type IdempotencyStore, keyFromMessageId, RecordStatus } from 'azure-functions-idempotency';
import { PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';
import { PaymentRequestedSchema, type ChargeResult } from '../payments/schema';
import { jsonAnswer, problemAnswer, type ApiAnswer, type ApiRequest } from './httpTypes';
import { PAYMENT_ACCEPTED_CONSUMER } from './paymentsApi';

/** Seconds a client should wait before asking again about a payment not settled yet. */
const RETRY_AFTER_SECONDS = '2';

/**
 * `GET /api/payments/{paymentId}`: where the 202 of `POST /api/payments` points. Answers from the
 * payments consumer's own dedup record (the truth of what happened to the payment):
 * - no record yet, but the API accepted it (its `accepted` marker, kept as long as the API's records):
 *   200 `accepted` with `acceptedAt` and `Retry-After`: the payment is queued;
 * - no record and no marker: 404 `payment-not-found` (never accepted here, or accepted so long ago that the
 *   marker was swept and the consumer has not run);
 * - in progress or released for a retry: 200 `processing` with `Retry-After`;
 * - completed: 200 with the charge result (`succeeded` with the charge id, `declined`, `rejected`).
 * Any caller with a function key may read any payment's status: it holds no payload, only its outcome.
 */
export function paymentStatus(store: IdempotencyStore): (request: ApiRequest) => Promise<ApiAnswer> {
  return async (request) => {
    const paymentId = paymentIdOf(request.url);
    if (paymentId === undefined || !PaymentRequestedSchema.shape.paymentId.safeParse(paymentId).success) {
      return problemAnswer(400, 'invalid-payment-id', 'Invalid payment id', 'the path must end with a paymentId: 1-128 characters of A-Z a-z 0-9 . _ : -');
    }
    const record = await store.get(keyFromMessageId(PAYMENTS_CONSUMER, paymentId));
    if (!record) {
      const accepted = await store.get({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: paymentId });
      const acceptedAt = (accepted?.result as { acceptedAt?: unknown } | undefined)?.acceptedAt;
      if (typeof acceptedAt === 'string') return jsonAnswer(200, { paymentId, status: 'accepted', acceptedAt }, { 'retry-after': RETRY_AFTER_SECONDS });
      return problemAnswer(404, 'payment-not-found', 'No such payment', `payment ${paymentId} was not accepted here (or so long ago that its record is gone)`);
    }
    if (record.status !== RecordStatus.Completed) {
      return jsonAnswer(200, { paymentId, status: 'processing', attempt: record.attempt }, { 'retry-after': RETRY_AFTER_SECONDS });
    }
    const result = record.result as ChargeResult;
    return jsonAnswer(200, { paymentId, ...result });
  };
}

/** The last path segment of `url`, decoded; undefined when it is not a status path. */
function paymentIdOf(url: string): string | undefined {
  const path = new URL(url, 'http://localhost').pathname.replace(/\/+$/, '');
  const match = /\/payments\/([^/]+)$/.exec(path);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return undefined;
  }
}
