import { randomUUID } from 'node:crypto';
import { payloadDigest } from 'azure-functions-idempotency';
import { park, report, type Delivery } from '../messaging/delivery';
import { decodeKeyedMessage } from '../messaging/keyedMessage';
import { ParkReason } from '../messaging/ParkingStore';
import { Outcome } from '../messaging/reportOutcome';
import { buildPlacement } from './documents';
import { orderPlacedSchema } from './messages';
import type { OrdersStore } from './OrdersStore';

/** Options of {@link handleOrderPlaced}. */
export interface OrderPlacedOptions {
  readonly store: OrdersStore;
  /** Seconds an audit entry lives (Cosmos `ttl`). */
  readonly auditTtlSeconds: number;
  /** A fresh id per processing attempt (default `randomUUID`). */
  readonly newWriterId?: () => string;
}

/**
 * Handles one `OrderPlaced`: key = MessageId (must equal `orderId`); the order, its lines and an
 * audit entry are created in one transactional batch whose first op creates the order document
 * (the dedup marker). On 409 the stored digest decides: same -> `Duplicate`; other -> parked as
 * `key-reused` with the alert metric, the stored order untouched. Malformed messages are parked.
 *
 * @returns the outcome; returning completes the message.
 * @throws StoreUnavailableError (retryable) so the broker redelivers; StoreRequestError.
 */
export async function handleOrderPlaced(delivery: Delivery, options: OrderPlacedOptions): Promise<Outcome> {
  const message = await decodeKeyedMessage(delivery, { schema: orderPlacedSchema, idOf: (order) => order.orderId, idName: 'orderId' });
  if (!message.ok) return message.outcome;
  const {
    key: { key },
    value: placed,
  } = message;

  // Digest of the validated message: formatting, property order and unknown fields do not count.
  const digest = payloadDigest(placed);
  const writerId = (options.newWriterId ?? randomUUID)();
  const placement = buildPlacement(
    placed,
    { consumer: delivery.consumer, digest, writerId },
    { messageId: key, correlationId: delivery.info.correlationId, deliveryCount: delivery.info.deliveryCount },
    delivery.clock.nowMs(),
    options.auditTtlSeconds,
  );

  let result;
  try {
    result = await options.store.placeOrder(placement);
  } catch (error) {
    report(delivery, Outcome.Retry, { idempotencyKey: key, digest, reason: errorName(error) });
    throw error;
  }
  if (result.kind === 'created') return report(delivery, Outcome.Processed, { idempotencyKey: key, digest });

  const stored = result.existing.order.idempotency;
  if (stored.digest === digest) {
    // Our own create whose answer was lost (and retried) is not a duplicate of someone else's.
    if (stored.writerId === writerId) return report(delivery, Outcome.Processed, { idempotencyKey: key, digest, reason: 'own-write-recognised' });
    return report(delivery, Outcome.Duplicate, { idempotencyKey: key, digest, reason: 'order-exists' });
  }
  return park(delivery, ParkReason.KeyReused, `order ${JSON.stringify(key)} exists with digest ${stored.digest}; this message has digest ${digest}`, {
    idempotencyKey: key,
    digest,
  });
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
