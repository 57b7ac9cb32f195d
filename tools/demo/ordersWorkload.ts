import { ParkReason } from '../../src/messaging/ParkingStore';
import { OrderMessageType, OrderStatus } from '../../src/orders/messages';
import { mulberry32 } from '../fakeProvider/random';
import type { PlannedSend } from './paymentsWorkload';

/** What a logical message on the orders queue is meant to test, and so what the consumer must do with it. */
export type OrderKind =
  /** A valid `OrderPlaced`: the order, its lines and one audit entry are written exactly once. */
  | 'order'
  /** An earlier order's id with other items, sent after that one completed: parked `key-reused`, the order unchanged. */
  | 'reusedKey'
  /** No retry can fix it: parked with `expectedParkReason`. */
  | 'malformed'
  /** A valid `OrderStatusChanged` (version `version` of order `orderIndex`). */
  | 'status';

/** One logical message of the orders workload (its copies share `index`). */
export interface OrderLogicalMessage {
  readonly index: number;
  readonly kind: OrderKind;
  readonly messageId: string | undefined;
  readonly body: unknown;
  /** Service Bus application properties (`type` tells an `OrderStatusChanged` from an `OrderPlaced`). */
  readonly applicationProperties?: Readonly<Record<string, unknown>>;
  /** For `reusedKey` and `status`: the index of the `OrderPlaced` whose order it concerns. */
  readonly orderIndex?: number;
  /** For `status`: the version it sets (1..k per order). */
  readonly version?: number;
  /**
   * For `status`: sent right after its `OrderPlaced` instead of after that one completed, so it may
   * arrive before the order exists (retried; parked `order-not-found` on the last delivery).
   */
  readonly early?: boolean;
  readonly expectedParkReason?: ParkReason;
  /** Extra unchanged copies the producer sends (its retries; for a status, a repeated version). */
  readonly extraCopies: number;
}

export interface OrdersWorkload {
  readonly messages: readonly OrderLogicalMessage[];
  /** Sends made at the start, in order: orders, malformed messages and early statuses, with their copies. */
  readonly initialSends: readonly PlannedSend[];
  /**
   * Sends that wait for an `OrderPlaced` (by index) to complete: its reused-key messages and its
   * status changes, versions shuffled with their repeats (so stale and repeated versions arrive).
   */
  readonly afterOrder: ReadonlyMap<number, readonly PlannedSend[]>;
}

export interface OrdersWorkloadOptions {
  /** Logical messages (orders, statuses, malformed and reused-key messages; not copies). */
  readonly messages: number;
  /** Extra copies per message: the integer part always, the fraction with that probability. */
  readonly duplicateRate: number;
  readonly seed: number;
}

/**
 * Shares of the draws (one draw makes a malformed message, a reused key, or an order with its statuses, so per
 * message these are about a third of it); most status versions per order (each gets 0..4, uniformly); share of
 * orders whose statuses are sent at once, racing their `OrderPlaced`.
 */
const MALFORMED_SHARE = 0.08;
const REUSED_SHARE = 0.06;
const MAX_VERSIONS = 4;
const EARLY_SHARE = 0.08;

const STATUS_CYCLE = [OrderStatus.Paid, OrderStatus.Shipped, OrderStatus.Delivered, OrderStatus.Cancelled] as const;

/** The status version `v` of every order sets (so a repeated version always says the same status). */
export function statusOfVersion(version: number): OrderStatus {
  return version === 0 ? OrderStatus.Placed : STATUS_CYCLE[(version - 1) % STATUS_CYCLE.length];
}

/**
 * A seeded orders workload: orders with 0..4 status changes each, malformed messages and reused order ids, every
 * message with `duplicateRate` extra copies. The same options give the same workload.
 */
export function buildOrdersWorkload(options: OrdersWorkloadOptions): OrdersWorkload {
  const random = mulberry32(options.seed ^ 0x0de75);
  const messages: OrderLogicalMessage[] = [];
  const reusable: number[] = [];
  const extraCopies = () => Math.floor(options.duplicateRate) + (random() < options.duplicateRate % 1 ? 1 : 0);
  const idOf = (i: number) => `ord-${options.seed}-${String(i).padStart(6, '0')}`;
  const statusType = { type: OrderMessageType.OrderStatusChanged };

  while (messages.length < options.messages) {
    const index = messages.length;
    const r = random();
    if (r < MALFORMED_SHARE) {
      messages.push({
        index,
        kind: 'malformed',
        ...malformedMessage(index, `bad-${options.seed}-${String(index).padStart(6, '0')}`),
        extraCopies: extraCopies(),
      });
    } else if (r < MALFORMED_SHARE + REUSED_SHARE && reusable.length > 0) {
      const original = messages[reusable.splice(Math.floor(random() * reusable.length), 1)[0]];
      const body = original.body as { items: Array<{ sku: string; quantity: number; unitPrice: number }> };
      const items = body.items.map((item, i) => (i === 0 ? { ...item, quantity: item.quantity + 1 + Math.floor(random() * 3) } : item));
      messages.push({
        index,
        kind: 'reusedKey',
        messageId: original.messageId,
        body: { ...(original.body as object), items },
        orderIndex: original.index,
        expectedParkReason: ParkReason.KeyReused,
        extraCopies: extraCopies(),
      });
    } else {
      const orderId = idOf(index);
      const lines = 1 + Math.floor(random() * 4);
      const items = Array.from({ length: lines }, (_, n) => ({
        sku: `SKU-${(index * 7 + n * 13) % 500}`,
        quantity: 1 + Math.floor(random() * 5),
        unitPrice: 100 + Math.floor(random() * 9_900),
      }));
      messages.push({
        index,
        kind: 'order',
        messageId: orderId,
        body: { orderId, customerId: `cust-${index % 89}`, items, currency: 'EUR' },
        extraCopies: extraCopies(),
      });
      reusable.push(index);
      const versions = Math.min(Math.floor(random() * (MAX_VERSIONS + 1)), options.messages - messages.length);
      const early = random() < EARLY_SHARE;
      for (let version = 1; version <= versions; version++) {
        messages.push({
          index: messages.length,
          kind: 'status',
          messageId: `${orderId}:status:${version}`,
          body: { orderId, status: statusOfVersion(version), version },
          applicationProperties: statusType,
          orderIndex: index,
          version,
          early,
          extraCopies: extraCopies(),
        });
      }
    }
  }

  // At the start: orders and malformed messages in order, each extra copy 1-40 positions after its
  // original; early statuses (with their copies) right behind their order, shuffled.
  const positioned: Array<{ at: number; send: PlannedSend }> = [];
  const afterOrder = new Map<number, PlannedSend[]>();
  for (const message of messages) {
    const copies = Array.from({ length: 1 + message.extraCopies }, (_, copy): PlannedSend => ({ index: message.index, copy }));
    if (message.kind === 'order' || message.kind === 'malformed') {
      positioned.push({ at: message.index, send: copies[0] });
      for (const send of copies.slice(1)) positioned.push({ at: message.index + 0.5 + random() * 40, send });
    } else if (message.kind === 'status' && message.early) {
      for (const send of copies) positioned.push({ at: message.orderIndex! + 0.01 + random() * 0.4, send });
    } else {
      afterOrder.set(message.orderIndex!, [...(afterOrder.get(message.orderIndex!) ?? []), ...copies]);
    }
  }
  positioned.sort((a, b) => a.at - b.at);
  for (const sends of afterOrder.values()) shuffle(sends, random);
  return { messages, initialSends: positioned.map((p) => p.send), afterOrder };
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}

function malformedMessage(index: number, id: string): Pick<OrderLogicalMessage, 'messageId' | 'body' | 'expectedParkReason' | 'applicationProperties'> {
  const items = [{ sku: 'SKU-1', quantity: 1, unitPrice: 1000 }];
  switch (index % 6) {
    case 0:
      return { messageId: id, body: `{"orderId": "${id}", "items": [`, expectedParkReason: ParkReason.InvalidJson };
    case 1:
      return {
        messageId: id,
        body: { orderId: id, customerId: 'cust-1', items: [{ sku: 'SKU-1', quantity: 0, unitPrice: 1000 }], currency: 'EUR' },
        expectedParkReason: ParkReason.InvalidSchema,
      };
    case 2:
      return {
        messageId: `${id}-other`,
        body: { orderId: id, customerId: 'cust-1', items, currency: 'EUR' },
        expectedParkReason: ParkReason.MessageIdMismatch,
      };
    case 3:
      return { messageId: undefined, body: { orderId: id, customerId: 'cust-1', items, currency: 'EUR' }, expectedParkReason: ParkReason.MissingMessageId };
    case 4:
      // An application property `type` the consumer does not know.
      return {
        messageId: id,
        body: { orderId: id, customerId: 'cust-1', items, currency: 'EUR' },
        applicationProperties: { type: 'OrderShipped' },
        expectedParkReason: ParkReason.InvalidSchema,
      };
    default:
      // A status change with version 0 (versions start at 1).
      return {
        messageId: `${id}:status:0`,
        body: { orderId: id, status: OrderStatus.Paid, version: 0 },
        applicationProperties: { type: OrderMessageType.OrderStatusChanged },
        expectedParkReason: ParkReason.InvalidSchema,
      };
  }
}
