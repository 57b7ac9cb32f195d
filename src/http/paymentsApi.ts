import {
  KeyInProgressError,
  KeyReusedError,
  getIdempotencyScope,
  makeIdempotent,
  payloadDigest,
  StoreUnavailableError,
  systemClock,
  type Clock,
  type IdempotencyKey,
  type IdempotencyStore,
} from 'azure-functions-idempotency';
import { PaymentRequestedSchema, type PaymentRequested } from '../payments/schema';
import { isMisdirected, type OwnerOf } from '../payments/shardTables';
import type { Telemetry } from '../telemetry/Telemetry';
import { CallerIdentityMode, callerOf } from './callerIdentity';
import { jsonAnswer, problemAnswer, type ApiAnswer, type ApiRequest } from './httpTypes';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from './idempotencyKeyHeader';
import { replayedAnswer, retryAfterSeconds, toStoredAnswer, fromStoredAnswer, type StoredAnswer } from './storedAnswer';

/** The dedup scope (consumer name) of `POST /api/payments` keys in the idempotency table. */
export const PAYMENTS_API_CONSUMER = 'http-payments';
/**
 * The scope of the "accepted" marker (key: the paymentId) the API writes after a payment is enqueued, so
 * that the 202's `Location` answers 200 `accepted` before the payments consumer has a record of it.
 */
export const PAYMENT_ACCEPTED_CONSUMER = 'http-payments-accepted';
/** Largest request body read, in bytes. */
export const MAX_PAYMENT_BODY_BYTES = 16 * 1024;

/** A stored answer; `replayed` is set (by the response hook, never stored) when it comes from the record. */
type Replayable = StoredAnswer & { readonly replayed?: true };

/** Sends a payment to the payments queue with `MessageId` = paymentId (Service Bus in Azure; a local sender in tests). */
export interface PaymentQueue {
  send(payment: PaymentRequested, signal: AbortSignal): Promise<void>;
}

export interface PaymentsApiDeps {
  /** The dedup store: the idempotency table, with the HTTP retention (24 h by default). */
  readonly store: IdempotencyStore;
  readonly queue: PaymentQueue;
  /**
   * Where the `accepted` marker goes: the store of the payment's owner shard, where the status reads it (`paymentShardsOf`).
   * Default `store`. Misdirected (sharded, no map): no marker; the owner's status answers 404 until its consumer's record.
   */
  readonly markers?: OwnerOf<IdempotencyStore>;
  readonly callerIdentity: CallerIdentityMode;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
}

/**
 * `POST /api/payments` with an `Idempotency-Key`, free of the Functions runtime. Per request:
 *
 * 1. The caller (see `callerOf`; none: 401), the key (missing or malformed: 400) and the body (not JSON,
 *    or not a PaymentRequested: 400) are checked. None of these answers is stored: the request did not
 *    start, and the same request gets the same answer again.
 * 2. The key is claimed in the core's store as `http-payments` + `[caller, key]`: keys are scoped by
 *    caller, so two callers' equal keys are two records and nobody is ever answered from another
 *    caller's record. The digest is that of the body's JSON value (member order and white space do not
 *    matter; any other difference is another body).
 * 3. As the claimant: the payment is enqueued (`MessageId` = paymentId), an `accepted` marker is committed
 *    under `http-payments-accepted` + paymentId (what the status URL answers until the consumer's record
 *    exists; sharded: in the owner shard's table, next to that record), and the 202 answer (with `Location` of the payment's status) is stored as the record's
 *    result, byte for byte. A failed marker write is a failed request (503, claim released), like a failed send.
 * 4. Same key, same body, completed: the stored answer, with `Idempotent-Replayed: true`. In flight:
 *    409 + `Retry-After` (the lease's end). Another body: 422.
 *
 * **Which failures are stored.** Only the 202 is. A failed enqueue (the queue unavailable or slow) is
 * answered 503 + `Retry-After` and the claim is released, so a retry with the same key runs again.
 * Stripe stores 5xx answers because re-running a charge after a partial failure is not safe; here the
 * only effect is a message whose `MessageId` is the paymentId, which the broker's duplicate detection and
 * the payments consumer's own dedup make safe to send twice: a retry can only complete the request,
 * while a stored 503 would make the client mint a new key for the same payment.
 */
export function paymentsApi(deps: PaymentsApiDeps): (request: ApiRequest) => Promise<ApiAnswer> {
  const clock = deps.clock ?? systemClock;
  const log = (message: string, fields: Record<string, string | number | undefined>, level: 'info' | 'warn' = 'info') =>
    deps.telemetry.log(level, message, { consumer: PAYMENTS_API_CONSUMER, endpoint: 'payments', ...fields });

  const accept = makeIdempotent(
    async (payment: PaymentRequested, _key: IdempotencyKey, _body: unknown): Promise<Replayable> => {
      // The lease's signal: aborted if the claim is lost (taken over) while the send runs.
      await deps.queue.send(payment, getIdempotencyScope()!.signal);
      const acceptedAt = new Date(clock.nowMs()).toISOString();
      // First accept wins: another caller's accept of the same paymentId finds the marker and leaves it. In the owner
      // shard's table (the Idempotency-Key record stays here, where the caller repeats its POST with this app's key).
      const markers = deps.markers ? deps.markers(payment.paymentId) : deps.store;
      if (!isMisdirected(markers))
        await markers.commit({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: payment.paymentId }, payloadDigest(payment), { acceptedAt });
      const location = `/api/payments/${encodeURIComponent(payment.paymentId)}`;
      const body = { paymentId: payment.paymentId, status: 'accepted', acceptedAt, statusUrl: location };
      return toStoredAnswer(jsonAnswer(202, body, { location }));
    },
    {
      store: deps.store,
      keyOf: (_payment, key) => key,
      payloadOf: (_payment, _key, body) => body,
      // Called for duplicates only: marks the stored answer as a replay (the mark itself is never stored).
      responseHook: (stored) => ({ ...stored, replayed: true as const }),
      clock,
    },
  );

  return async (request) => {
    const caller = callerOf(request, deps.callerIdentity);
    if (!caller) return noCaller(deps.callerIdentity, log);
    const parsed = parseIdempotencyKey(request.headers.get(IDEMPOTENCY_KEY_HEADER));
    if (!parsed.ok) {
      log('payments api: bad Idempotency-Key', { outcome: 'invalidKey', reason: parsed.problem, status: 400, caller });
      return problemAnswer(400, `idempotency-key-${parsed.problem}`, 'Idempotency-Key required', parsed.detail);
    }
    const idempotencyKey = parsed.key;
    const body = parseBody(request.body);
    const checked = body.ok ? PaymentRequestedSchema.safeParse(body.value) : undefined;
    if (!body.ok || !checked?.success) {
      const detail = body.ok ? (checked?.error?.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ') ?? '') : body.detail;
      log('payments api: invalid body', { outcome: 'invalidBody', status: 400, caller, idempotencyKey });
      return problemAnswer(400, 'invalid-payment', 'Invalid payment request', detail);
    }
    const key: IdempotencyKey = { consumer: PAYMENTS_API_CONSUMER, key: JSON.stringify([caller, idempotencyKey]) };
    const digest = payloadDigest(body.value);
    const fields = { caller, idempotencyKey, digest, paymentId: checked.data.paymentId };
    try {
      const stored = await accept(checked.data, key, body.value);
      const replayed = stored.replayed === true;
      const answer = replayed ? replayedAnswer(stored) : fromStoredAnswer(stored);
      log(replayed ? 'payments api: replayed' : 'payments api: accepted', { ...fields, outcome: replayed ? 'replayed' : 'accepted', status: answer.status });
      return answer;
    } catch (error) {
      if (error instanceof KeyInProgressError) {
        log('payments api: key in flight', { ...fields, outcome: 'inProgress', status: 409 });
        return problemAnswer(409, 'request-in-progress', 'A request with this Idempotency-Key is in progress', 'retry after the Retry-After delay', {
          'retry-after': retryAfterSeconds(error.leaseExpiresAtMs, clock.nowMs()),
        });
      }
      if (error instanceof KeyReusedError) {
        log('payments api: key reused with another body', { ...fields, outcome: 'keyReused', status: 422 }, 'warn');
        return problemAnswer(422, 'idempotency-key-reused', 'Idempotency-Key reused', 'this Idempotency-Key was used with another request body');
      }
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : typeof error;
      log('payments api: not accepted (not stored; a retry with the same key runs again)', { ...fields, outcome: 'failed', status: 503, reason }, 'warn');
      const retryAfter = error instanceof StoreUnavailableError ? '1' : '2';
      return problemAnswer(503, 'unavailable', 'Payment not accepted', 'try again with the same Idempotency-Key', { 'retry-after': retryAfter });
    }
  };
}

/**
 * The answer to a request with no caller identity (RFC 9110 §15.5.2, §11.6.1). Behind EasyAuth (Entra ID)
 * the caller authenticates with a bearer token: 401 with its `WWW-Authenticate: Bearer` challenge. With
 * function keys (normally checked by the host before the app runs; not under `func start`) there is no HTTP
 * authentication scheme to challenge with, so the refusal is 403, which needs none.
 */
function noCaller(
  mode: CallerIdentityMode,
  log: (message: string, fields: Record<string, string | number | undefined>, level?: 'info' | 'warn') => void,
): ApiAnswer {
  if (mode === CallerIdentityMode.EasyAuth) {
    log('payments api: no caller identity', { outcome: 'unauthenticated', status: 401 }, 'warn');
    return problemAnswer(401, 'no-caller', 'Authentication required', 'call with a Microsoft Entra ID bearer token', {
      'www-authenticate': 'Bearer realm="payments"',
    });
  }
  log('payments api: no function key', { outcome: 'unauthenticated', status: 403 }, 'warn');
  return problemAnswer(403, 'no-caller', 'Function key required', 'call with a function key (x-functions-key header or code query parameter)');
}

/** The body as a JSON value, or why it is not one. */
function parseBody(bytes: Buffer): { ok: true; value: unknown } | { ok: false; detail: string } {
  if (bytes.length === 0) return { ok: false, detail: 'the body is empty; send a PaymentRequested JSON object' };
  if (bytes.length > MAX_PAYMENT_BODY_BYTES) return { ok: false, detail: `the body is ${bytes.length} bytes, more than ${MAX_PAYMENT_BODY_BYTES}` };
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch {
    return { ok: false, detail: 'the body is not JSON' };
  }
}
