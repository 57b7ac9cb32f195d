import { createHash } from 'node:crypto';
import { KeyInProgressError, KeyReusedError, makeIdempotent, payloadDigest, systemClock, type Clock, type IdempotencyStore } from 'azure-functions-idempotency';
import { isMisdirected, misdirectedText, type OwnerOf } from '../payments/shardTables';
import type { Telemetry } from '../telemetry/Telemetry';
import { jsonAnswer, problemAnswer, type ApiAnswer, type ApiRequest } from './httpTypes';
import { EventEnvelopeSchema, HANDLED_EVENT_TYPES, PaymentEventSchema, type PaymentEvent } from './paymentEvents';
import type { PaymentStateTable } from './PaymentStateTable';
import { fromStoredAnswer, replayedAnswer, retryAfterSeconds, toStoredAnswer, type StoredAnswer } from './storedAnswer';
import { SIGNATURE_HEADER, verifyWebhookSignature } from './webhookSignature';

/** The dedup scope of provider events (key: the provider's event id) in the idempotency table. */
export const WEBHOOK_CONSUMER = 'webhook-payment-provider';
const MAX_EVENT_BYTES = 64 * 1024;

export interface PaymentWebhookDeps {
  /** The dedup store (idempotency table, `WEBHOOK_RETENTION_HOURS`). */
  readonly store: IdempotencyStore;
  /**
   * The Payment rows: one table, or (sharded, `paymentShardsOf`) the owner shard's table of each payment, or the
   * misdirected route when this app cannot reach the owner (the event is then refused 503: the provider retries).
   */
  readonly payments: PaymentStateTable | OwnerOf<PaymentStateTable>;
  /**
   * The signing secrets accepted: the current one and, during a rotation, the previous one. Empty: every
   * request is answered 503 (the setting is missing or its Key Vault reference did not resolve).
   */
  readonly secrets: readonly string[];
  readonly toleranceSec: number;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
}

type Replayable = StoredAnswer & { readonly replayed?: true };

/**
 * `POST /api/webhooks/payment-provider`, free of the Functions runtime:
 *
 * 1. The signature over the raw body (see `verifyWebhookSignature`): missing or malformed 400, wrong 403,
 *    outside the tolerance window 400. Refusals are logged with the reason, the body's length and SHA-256,
 *    never the body.
 * 2. The event is parsed (not JSON or not an event: 400, logged likewise). A signed event of a type this app
 *    does not handle is acknowledged (200 `ignored`) and logged, never applied: the provider retries every
 *    non-2xx for days, and a new event type at the provider must not turn into a retry storm.
 * 3. Deduplicated by the provider's event id with the core (`makeIdempotent`, scope `webhook-payment-provider`):
 *    a redelivered event gets the stored 200 with `Idempotent-Replayed: true` and changes nothing; one in
 *    flight gets 409 + `Retry-After` (the provider retries); the same id with another body 422.
 * 4. Applied to the Payment row by version with conditional writes (`PaymentStateTable.apply`): an
 *    older or equal version changes nothing, so duplicates and out-of-order deliveries converge. Sharded, the row
 *    is the owner shard's (its account's `paymentstate`); the event id's record stays with the receiver.
 *    A store failure answers 503 and stores nothing: the provider's retry applies it.
 */
export function paymentWebhook(deps: PaymentWebhookDeps): (request: ApiRequest) => Promise<ApiAnswer> {
  const clock = deps.clock ?? systemClock;
  const log = (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, string | number | undefined>) =>
    deps.telemetry.log(level, message, { consumer: WEBHOOK_CONSUMER, endpoint: 'webhook', ...fields });

  const handle = makeIdempotent(
    async (event: PaymentEvent, _raw: unknown, payments: PaymentStateTable): Promise<Replayable> => {
      const applied = await payments.apply(event);
      const outcome = applied.kind === 'applied' ? 'applied' : 'stale';
      return toStoredAnswer(jsonAnswer(200, { received: true, eventId: event.id, outcome }));
    },
    {
      store: deps.store,
      keyOf: (event) => ({ consumer: WEBHOOK_CONSUMER, key: event.id }),
      payloadOf: (_event, raw: unknown) => raw,
      responseHook: (stored) => ({ ...stored, replayed: true as const }),
      clock,
    },
  );

  return async (request) => {
    const bodyDigest = createHash('sha256').update(request.body).digest('hex');
    const bodyFields = { bodyBytes: request.body.length, bodyDigest };
    if (deps.secrets.length === 0) {
      log('error', 'webhook: WEBHOOK_SIGNING_SECRET is not set (or its Key Vault reference did not resolve); refusing every event', {
        outcome: 'notConfigured',
        status: 503,
      });
      return problemAnswer(503, 'not-configured', 'Webhook not configured', 'the receiver has no signing secret', { 'retry-after': '60' });
    }
    const check = verifyWebhookSignature(request.headers.get(SIGNATURE_HEADER), request.body, deps.secrets, clock.nowMs(), deps.toleranceSec);
    if (!check.ok) {
      log('warn', `webhook: signature refused (${check.reason})`, {
        outcome: 'signatureRejected',
        reason: check.reason,
        status: check.status,
        skewSec: check.skewSec,
        ...bodyFields,
      });
      return problemAnswer(check.status, `signature-${check.reason}`, 'Signature refused', `the ${SIGNATURE_HEADER} header is ${check.reason}`);
    }
    const event = parseEvent(request.body);
    if (!event.ok && event.ignoredType !== undefined) {
      log('info', 'webhook: event type not handled; acknowledged, not applied', {
        outcome: 'ignored',
        status: 200,
        eventType: event.ignoredType,
        idempotencyKey: event.id,
        ...bodyFields,
      });
      return jsonAnswer(200, { received: true, eventId: event.id, outcome: 'ignored' });
    }
    if (!event.ok) {
      log('warn', 'webhook: signed body is not an event', { outcome: 'invalidEvent', status: 400, ...bodyFields });
      return problemAnswer(400, 'invalid-event', 'Invalid event', event.detail);
    }
    const fields = {
      idempotencyKey: event.value.id,
      eventType: event.value.type,
      paymentId: event.value.data.paymentId,
      version: event.value.data.version,
      digest: payloadDigest(event.raw),
    };
    // Sharded: the Payment row goes to the owner shard's table (the provider posts every event to one URL). Without a
    // way to reach the owner nothing is written here, where the row would sit unseen: 503, the provider retries.
    const payments = typeof deps.payments === 'function' ? deps.payments(event.value.data.paymentId) : deps.payments;
    if (isMisdirected(payments)) {
      log('error', `webhook: ${misdirectedText(event.value.data.paymentId, payments)}; event refused, nothing stored`, {
        ...fields,
        outcome: 'misdirected',
        status: 503,
        ownerShard: payments.shard,
      });
      return problemAnswer(503, 'misdirected-payment', 'Payment owned by another shard', "this receiver cannot reach the payment's shard; retry later", {
        'retry-after': '60',
      });
    }
    try {
      const stored = await handle(event.value, event.raw, payments);
      const replayed = stored.replayed === true;
      log('info', replayed ? 'webhook: duplicate event replayed' : 'webhook: event processed', {
        ...fields,
        outcome: replayed ? 'replayed' : 'processed',
        status: stored.status,
      });
      return replayed ? replayedAnswer(stored) : fromStoredAnswer(stored);
    } catch (error) {
      if (error instanceof KeyInProgressError) {
        log('info', 'webhook: event in flight', { ...fields, outcome: 'inProgress', status: 409 });
        return problemAnswer(409, 'event-in-progress', 'Event in progress', 'this event is being processed; retry later', {
          'retry-after': retryAfterSeconds(error.leaseExpiresAtMs, clock.nowMs()),
        });
      }
      if (error instanceof KeyReusedError) {
        log('warn', 'webhook: event id reused with another body', { ...fields, outcome: 'keyReused', status: 422 });
        return problemAnswer(422, 'event-id-reused', 'Event id reused', 'this event id was received before with another body');
      }
      log('warn', 'webhook: event not processed (nothing stored; the provider retries)', {
        ...fields,
        outcome: 'failed',
        status: 503,
        reason: error instanceof Error ? error.name : typeof error,
      });
      return problemAnswer(503, 'unavailable', 'Event not processed', 'retry later', { 'retry-after': '5' });
    }
  };
}

function parseEvent(bytes: Buffer): { ok: true; value: PaymentEvent; raw: unknown } | { ok: false; detail: string; ignoredType?: string; id?: string } {
  if (bytes.length > MAX_EVENT_BYTES) return { ok: false, detail: `the body is more than ${MAX_EVENT_BYTES} bytes` };
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ok: false, detail: 'the body is not JSON' };
  }
  const envelope = EventEnvelopeSchema.safeParse(raw);
  if (envelope.success && !HANDLED_EVENT_TYPES.has(envelope.data.type)) {
    return { ok: false, detail: 'event type not handled', ignoredType: envelope.data.type, id: envelope.data.id };
  }
  const parsed = PaymentEventSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, detail: parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ') };
  return { ok: true, value: parsed.data, raw };
}
