import { type IdempotencyStore, keyFromMessageId, RecordStatus } from 'azure-functions-idempotency';
import { PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';
import { PaymentRequestedSchema, type ChargeResult } from '../payments/schema';
import { isMisdirected, misdirectedText, type OwnerOf, type ShardRoute } from '../payments/shardTables';
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
 *
 * **Shards** (`records` a function: the owner's store by payment id, `paymentShardsOf`): the records and the marker are
 * read in the owner shard's account, whichever shard is asked (the caller asks the app it posted to, with that app's
 * function key: a redirect to the owner would need the owner's key). A shard that owns the payment and has no map to
 * reach the owner answers 421 Misdirected Request naming the owner (`ownerShard`), never a 404 from its own table.
 */
export function paymentStatus(records: IdempotencyStore | OwnerOf<IdempotencyStore>): (request: ApiRequest) => Promise<ApiAnswer> {
  const storeOf: OwnerOf<IdempotencyStore> = typeof records === 'function' ? records : () => records;
  return async (request) => {
    const paymentId = paymentIdOf(request.url);
    if (paymentId === undefined || !PaymentRequestedSchema.shape.paymentId.safeParse(paymentId).success) {
      return problemAnswer(400, 'invalid-payment-id', 'Invalid payment id', 'the path must end with a paymentId: 1-128 characters of A-Z a-z 0-9 . _ : -');
    }
    const store = storeOf(paymentId);
    if (isMisdirected(store)) return misdirectedAnswer(paymentId, store);
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

/**
 * 421 Misdirected Request (RFC 9110 §15.5.20: "the request was directed at a server that is unable or unwilling to
 * produce an authoritative response"), a problem naming the shard that can: `ownerShard` of `shardCount`.
 */
export function misdirectedAnswer(paymentId: string, route: Extract<ShardRoute, { kind: 'misdirected' }>): ApiAnswer {
  const problem = {
    type: '/problems/misdirected-payment',
    title: 'Payment owned by another shard',
    status: 421,
    detail: `${misdirectedText(paymentId, route)}: ask shard ${route.shard}'s app`,
    paymentId,
    ownerShard: route.shard,
    shardCount: route.count,
  };
  return jsonAnswer(421, problem, {}, 'application/problem+json');
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
