import type { OrderLine, OrderPlaced, OrderStatus } from './messages';
import { orderTotalMinor } from './messages';

/** What an order document records about the message that created it (the dedup marker). */
export interface OrderIdempotency {
  /** The consumer scope of the key (publish/subscribe: each consumer has its own). */
  readonly consumer: string;
  /** The idempotency key: the Service Bus `MessageId`, equal to the order id. */
  readonly key: string;
  /** `payloadDigest` of the validated `OrderPlaced`: another digest under this key means the id was reused. */
  readonly digest: string;
  /** Random per processing attempt: recognises our own create when its answer was lost and retried. */
  readonly writerId: string;
}

/**
 * The order itself: business data and the dedup marker in one document (id = partition key =
 * orderId). Never expires (no `ttl`).
 */
export interface OrderDocument {
  readonly id: string;
  readonly orderId: string;
  readonly kind: 'order';
  readonly customerId: string;
  readonly currency: string;
  readonly itemCount: number;
  /** Sum of quantity x unit price, in minor units. */
  readonly totalMinor: number;
  readonly status: OrderStatus;
  /** Version of the last applied `OrderStatusChanged`; 0 until one is applied. */
  readonly statusVersion: number;
  readonly statusUpdatedAtMs: number;
  readonly createdAtMs: number;
  readonly idempotency: OrderIdempotency;
}

/** One line of an order; business data, never expires. */
export interface OrderLineDocument {
  readonly id: string;
  readonly orderId: string;
  readonly kind: 'line';
  /** Position in the message's `items`, from 0. */
  readonly lineNo: number;
  readonly sku: string;
  readonly quantity: number;
  readonly unitPrice: number;
  readonly lineTotalMinor: number;
}

/**
 * What happened and from which delivery, for operators. Expires after `ttl` seconds (Cosmos native
 * TTL; the container has `defaultTtl: -1`, so only items with their own `ttl` expire).
 */
export interface OrderAuditDocument {
  readonly id: string;
  readonly orderId: string;
  readonly kind: 'audit';
  readonly event: 'OrderPlaced';
  readonly digest: string;
  readonly messageId: string;
  readonly correlationId?: string;
  readonly deliveryCount?: number;
  readonly atMs: number;
  /** Seconds until Cosmos deletes this entry. */
  readonly ttl: number;
}

/**
 * Document ids inside one order's partition. Ids are unique per partition key, so an order id
 * that itself contains `:line:` cannot collide: its documents live in another partition.
 */
export const documentIds = {
  order: (orderId: string): string => orderId,
  line: (orderId: string, lineNo: number): string => `${orderId}:line:${lineNo}`,
  audit: (orderId: string): string => `${orderId}:audit:placed`,
};

/** Every document one `OrderPlaced` writes, in batch order (the order, the marker, first). */
export interface OrderPlacement {
  readonly order: OrderDocument;
  readonly lines: readonly OrderLineDocument[];
  readonly audit: OrderAuditDocument;
}

/** Builds the documents of one placement (pure: the caller supplies time, ids and digest). */
export function buildPlacement(
  placed: OrderPlaced,
  marker: { consumer: string; digest: string; writerId: string },
  delivery: { messageId: string; correlationId?: string; deliveryCount?: number },
  nowMs: number,
  auditTtlSeconds: number,
): OrderPlacement {
  const { orderId } = placed;
  const lines = placed.items.map((line: OrderLine, lineNo): OrderLineDocument => ({
    id: documentIds.line(orderId, lineNo),
    orderId,
    kind: 'line',
    lineNo,
    sku: line.sku,
    quantity: line.quantity,
    unitPrice: line.unitPrice,
    lineTotalMinor: line.quantity * line.unitPrice,
  }));
  return {
    order: {
      id: documentIds.order(orderId),
      orderId,
      kind: 'order',
      customerId: placed.customerId,
      currency: placed.currency,
      itemCount: placed.items.length,
      totalMinor: orderTotalMinor(placed.items),
      status: 'placed',
      statusVersion: 0,
      statusUpdatedAtMs: nowMs,
      createdAtMs: nowMs,
      idempotency: { consumer: marker.consumer, key: orderId, digest: marker.digest, writerId: marker.writerId },
    },
    lines,
    audit: {
      id: documentIds.audit(orderId),
      orderId,
      kind: 'audit',
      event: 'OrderPlaced',
      digest: marker.digest,
      messageId: delivery.messageId,
      ...(delivery.correlationId === undefined ? {} : { correlationId: delivery.correlationId }),
      ...(delivery.deliveryCount === undefined ? {} : { deliveryCount: delivery.deliveryCount }),
      atMs: nowMs,
      ttl: auditTtlSeconds,
    },
  };
}
