import { payloadDigest } from 'azure-functions-idempotency';
import { decodeBody } from '../messaging/body';
import { ParkReason } from '../messaging/ParkingStore';
import { messageIdText } from '../messaging/messageInfo';
import { Outcome } from '../messaging/reportOutcome';
import { park, report, type Delivery } from '../messaging/delivery';
import { OrderNotFoundError, StatusContentionError } from './errors';
import { orderStatusChangedSchema } from './messages';
import type { OrdersStore } from './OrdersStore';

/** Options of {@link handleStatusChanged}. */
export interface StatusChangedOptions {
  readonly store: OrdersStore;
  /** The queue's max delivery count: on this delivery a status for a missing order is parked. */
  readonly maxDeliveryCount: number;
  /** Read-decide-replace rounds before giving up to a redelivery (412 = someone wrote in between). */
  readonly maxAttempts: number;
}

/**
 * Applies one `OrderStatusChanged` by natural idempotency, no dedup record: the status is absolute
 * and carries a version, so the order document is its own guard.
 *
 * ```
 * read order (etag E, statusVersion S)
 *   absent             -> throw OrderNotFoundError (redelivered; parked on the last delivery)
 *   version <  S       -> ignore, messages.stale_versions{reason=stale}
 *   version == S       -> same status: ignore {reason=repeated}; other status: park key-reused (alert)
 *   version >  S       -> replace If-Match E -> 200 done | 412 read again (at most maxAttempts rounds)
 * ```
 * Versions, not arrival order, decide: concurrent updates converge on the highest version.
 *
 * @throws OrderNotFoundError, StatusContentionError, StoreUnavailableError (all retryable); StoreRequestError.
 */
export async function handleStatusChanged(delivery: Delivery, options: StatusChangedOptions): Promise<Outcome> {
  const decoded = decodeBody(delivery.body, orderStatusChangedSchema);
  if (!decoded.ok) return park(delivery, decoded.reason, decoded.detail, { idempotencyKey: messageIdText(delivery.info) });
  const change = decoded.value;
  const idempotencyKey = `${change.orderId}@v${change.version}`;
  const digest = payloadDigest(change);
  const fields = { idempotencyKey, digest };

  try {
    for (let attempt = 1; attempt <= options.maxAttempts; attempt++) {
      const current = await options.store.readOrder(change.orderId);
      if (!current) {
        if ((delivery.info.deliveryCount ?? 1) >= options.maxDeliveryCount) {
          return await park(
            delivery,
            ParkReason.OrderNotFound,
            `order ${JSON.stringify(change.orderId)} still does not exist on delivery ${delivery.info.deliveryCount}`,
            fields,
          );
        }
        throw new OrderNotFoundError(change.orderId);
      }
      const { order, etag } = current;
      if (change.version < order.statusVersion) {
        return report(delivery, Outcome.StaleVersion, { ...fields, reason: 'stale', detail: `stored version ${order.statusVersion}` });
      }
      if (change.version === order.statusVersion) {
        if (change.status === order.status) return report(delivery, Outcome.StaleVersion, { ...fields, reason: 'repeated' });
        return await park(
          delivery,
          ParkReason.KeyReused,
          `version ${change.version} was applied with status ${order.status}; this message says ${change.status}`,
          fields,
        );
      }
      const replaced = await options.store.replaceOrder(
        { ...order, status: change.status, statusVersion: change.version, statusUpdatedAtMs: delivery.clock.nowMs() },
        etag,
      );
      if (replaced === 'replaced') return report(delivery, Outcome.Applied, { ...fields, attempt });
      // 412 (written since our read) or 404 (deleted since): read again and decide again.
    }
    throw new StatusContentionError(change.orderId, options.maxAttempts);
  } catch (error) {
    report(delivery, Outcome.Retry, { ...fields, reason: error instanceof Error ? error.name : typeof error });
    throw error;
  }
}
