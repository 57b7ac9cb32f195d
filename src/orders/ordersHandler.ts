import { systemClock, type Clock } from 'azure-functions-idempotency';
import { park, type Delivery } from '../messaging/delivery';
import { messageInfoFrom } from '../messaging/messageInfo';
import { ParkReason, type ParkingStore } from '../messaging/ParkingStore';
import type { Outcome } from '../messaging/reportOutcome';
import { invocationLogSink, type InvocationLog } from '../telemetry/invocationLogSink';
import type { Telemetry } from '../telemetry/Telemetry';
import { handleOrderPlaced } from './handleOrderPlaced';
import { handleStatusChanged } from './handleStatusChanged';
import { OrderMessageType, orderMessageTypeOf, typeShadowedByBody } from './messages';
import type { OrdersStore } from './OrdersStore';

/** The consumer scope of the orders consumer's keys and metrics. */
export const ORDERS_CONSUMER = 'orders';
/** Default lifetime of an audit entry: 90 days (Cosmos `ttl`, seconds). */
export const DEFAULT_AUDIT_TTL_SECONDS = 90 * 86_400;

/** What the orders handler needs; built from settings in `src/app/orders.ts`, by hand in tests. */
export interface OrdersHandlerDeps {
  readonly store: OrdersStore;
  readonly parking: ParkingStore;
  readonly telemetry: Telemetry;
  readonly clock?: Clock;
  /** Default {@link ORDERS_CONSUMER}. */
  readonly consumer?: string;
  /** The queue's `maxDeliveryCount` (`SERVICEBUS_MAX_DELIVERY_COUNT`), default 10. */
  readonly maxDeliveryCount?: number;
  /** Read-decide-replace rounds for one status change, default 5. */
  readonly maxStatusAttempts?: number;
  /** Default {@link DEFAULT_AUDIT_TTL_SECONDS}. */
  readonly auditTtlSeconds?: number;
  /** A fresh id per processing attempt; default `crypto.randomUUID`. */
  readonly newWriterId?: () => string;
}

/**
 * The part of the Functions `InvocationContext` the handler uses (so the logic does not depend on
 * the runtime): trigger metadata and, optionally, log methods.
 */
export interface OrdersInvocationContext extends InvocationLog {
  readonly triggerMetadata?: Readonly<Record<string, unknown>>;
}

/** Handles one delivery; resolving completes the message, rejecting abandons it (redelivery). */
export type OrdersHandler = (message: unknown, context: OrdersInvocationContext) => Promise<Outcome>;

/**
 * Builds the orders queue handler. Per message type (application property `type`, absent =
 * `OrderPlaced`): `OrderPlaced` -> {@link handleOrderPlaced}; `OrderStatusChanged` ->
 * {@link handleStatusChanged}; any other type is parked (`invalid-schema`).
 *
 * Settlement: what no retry can fix is parked and the handler returns (the message completes);
 * transient failures throw so the broker redelivers.
 *
 * @example
 * const handler = makeOrdersHandler({ store: new OrdersStore(container), parking, telemetry: new Telemetry() });
 * await handler(body, new InvocationContext({ triggerMetadata: { messageId: 'o-1', deliveryCount: 1 } }));
 */
export function makeOrdersHandler(deps: OrdersHandlerDeps): OrdersHandler {
  const consumer = deps.consumer ?? ORDERS_CONSUMER;
  const clock = deps.clock ?? systemClock;
  const auditTtlSeconds = deps.auditTtlSeconds ?? DEFAULT_AUDIT_TTL_SECONDS;
  const maxDeliveryCount = deps.maxDeliveryCount ?? 10;
  const maxAttempts = deps.maxStatusAttempts ?? 5;

  return async function ordersHandler(message, context) {
    const delivery: Delivery = {
      consumer,
      body: message,
      info: messageInfoFrom(context.triggerMetadata),
      telemetry: deps.telemetry.withSink(invocationLogSink(context)),
      parking: deps.parking,
      clock,
    };
    const shadowed = typeShadowedByBody(message);
    if (shadowed) return park(delivery, ParkReason.InvalidSchema, shadowed);
    const type = orderMessageTypeOf(context.triggerMetadata);
    if (type === OrderMessageType.OrderPlaced) {
      return handleOrderPlaced(delivery, { store: deps.store, auditTtlSeconds, newWriterId: deps.newWriterId });
    }
    if (type === OrderMessageType.OrderStatusChanged) {
      return handleStatusChanged(delivery, { store: deps.store, maxDeliveryCount, maxAttempts });
    }
    return park(delivery, ParkReason.InvalidSchema, `unknown message type ${JSON.stringify(type.unknown)} (application property "type")`);
  };
}
