import type { ServiceBusMessage } from '@azure/service-bus';
import { UsageError } from '../cli/commandLine';
import {
  OrderMessageType,
  OrderStatus,
  orderPlacedSchema,
  orderStatusChangedSchema,
  type OrderPlaced,
  type OrderStatusChanged,
} from '../../src/orders/messages';
import { PaymentRequestedSchema, type PaymentRequested } from '../../src/payments/schema';

/**
 * Message bodies the producer sends, validated with the same rules the consumers expect, and the send plan:
 * every message the producer will send, in order, with its MessageId (= the business id). Pure: no I/O.
 */

/** The consumers' own schemas: the producer builds only bodies they accept (its ids stay within Service Bus's 128-character MessageId). */
export const paymentSchema = PaymentRequestedSchema;
export const orderSchema = orderPlacedSchema;
type Payment = PaymentRequested;
type Order = OrderPlaced;

/** Which queue/body shape. */
export type MessageKind = 'payments' | 'orders';

/** Orders queue message types (the application property `type`); payments have one type. */
export type OrdersMessageType = OrderMessageType;

/** Statuses an `OrderStatusChanged` may set, in the order `--reuse-keys` cycles through them. */
export const ORDER_STATUSES = Object.values(OrderStatus);

/** Why a message is in the plan: first send, unchanged resend, or same id with another body. */
export type SendReason = 'original' | 'duplicate' | 'reusedKey';

/** One message to send. `round` groups messages sent together (the producer may pause between rounds). */
export interface PlannedMessage {
  readonly messageId: string;
  readonly body: Payment | Order | OrderStatusChanged;
  readonly contentType: 'application/json';
  readonly subject: MessageKind;
  readonly correlationId: string;
  /** `type` is set for orders (`OrderPlaced` or `OrderStatusChanged`): the consumer dispatches on it. */
  readonly applicationProperties: { readonly producerRun: string; readonly sendReason: SendReason; readonly type?: OrdersMessageType };
  readonly round: number;
}

/** What to produce; see `parseProducerArgs` for the command-line form. */
export interface PlanOptions {
  readonly kind: MessageKind;
  /** Distinct business ids. */
  readonly count: number;
  /** Extra unchanged sends of every message. */
  readonly duplicates: number;
  /** Extra sends of every id with a different body (a producer bug the consumers must reject). */
  readonly reusedKeys: number;
  readonly idPrefix: string;
  readonly customerId: string;
  readonly currency: string;
  /** payments: amount in minor units. */
  readonly amount: number;
  /** orders: one line of this sku, quantity and unit price. */
  readonly sku: string;
  readonly quantity: number;
  readonly unitPrice: number;
  /** orders: `OrderPlaced` (default) or `OrderStatusChanged` (then `status` and `version`). */
  readonly messageType?: OrdersMessageType;
  readonly status?: OrderStatus;
  readonly version?: number;
  /** Correlates every message of one producer run. */
  readonly runId: string;
}

/** Thrown when a built body breaks its schema (a usage error: exit 2); the message names every bad field. */
export class InvalidMessageError extends UsageError {}

/** The business id of message `index` (1-based), e.g. `pay-run1-0001`. */
export function businessIdOf(options: Pick<PlanOptions, 'idPrefix'>, index: number): string {
  return `${options.idPrefix}-${String(index).padStart(4, '0')}`;
}

/**
 * The body of message `id`; `variant` > 0 changes the payload but not the id (amount or quantity + variant),
 * which is what a reused key looks like to a consumer.
 * @throws InvalidMessageError when the body breaks its schema (e.g. currency "eur").
 */
export function buildBody(options: PlanOptions, id: string, variant = 0): Payment | Order | OrderStatusChanged {
  if (options.kind === 'orders' && options.messageType === OrderMessageType.OrderStatusChanged) {
    // A reused key of a status change: the same version with another status (the consumer parks it key-reused).
    const first = ORDER_STATUSES.indexOf(options.status ?? OrderStatus.Paid);
    const candidate = { orderId: id, status: ORDER_STATUSES[(first + variant) % ORDER_STATUSES.length], version: options.version ?? 1 };
    const parsed = orderStatusChangedSchema.safeParse(candidate);
    if (!parsed.success) throw new InvalidMessageError(`invalid OrderStatusChanged message ${id}: ${formatIssues(parsed.error.issues)}`);
    return parsed.data;
  }
  const candidate =
    options.kind === 'payments'
      ? { paymentId: id, customerId: options.customerId, amount: options.amount + variant, currency: options.currency }
      : {
          orderId: id,
          customerId: options.customerId,
          items: [{ sku: options.sku, quantity: options.quantity + variant, unitPrice: options.unitPrice }],
          currency: options.currency,
        };
  const schema = options.kind === 'payments' ? paymentSchema : orderSchema;
  const parsed = schema.safeParse(candidate);
  if (!parsed.success) throw new InvalidMessageError(`invalid ${options.kind} message ${id}: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

/**
 * Every message to send, in order: round 0 the originals, rounds 1..duplicates unchanged resends, then one
 * round per reused-key variant. The MessageId is always the business id.
 * @throws InvalidMessageError when a body would break its schema.
 * @example buildSendPlan({ ...opts, count: 2, duplicates: 1 }) // 4 messages: a, b, a, b
 */
export function buildSendPlan(options: PlanOptions): PlannedMessage[] {
  const ids = Array.from({ length: options.count }, (_, i) => businessIdOf(options, i + 1));
  const plan: PlannedMessage[] = [];
  const statusChange = options.kind === 'orders' && options.messageType === OrderMessageType.OrderStatusChanged;
  const type = options.kind === 'orders' ? (options.messageType ?? OrderMessageType.OrderPlaced) : undefined;
  const add = (id: string, body: Payment | Order | OrderStatusChanged, sendReason: SendReason, round: number): void => {
    plan.push({
      // A status change's MessageId names its order and version (`ord-1:status:2`), as the demo's producer does.
      messageId: statusChange ? `${id}:status:${options.version ?? 1}` : id,
      body,
      contentType: 'application/json',
      subject: options.kind,
      correlationId: options.runId,
      applicationProperties: { producerRun: options.runId, sendReason, ...(type ? { type } : {}) },
      round,
    });
  };
  const originals = ids.map((id) => [id, buildBody(options, id)] as const);
  for (const [id, body] of originals) add(id, body, 'original', 0);
  for (let r = 1; r <= options.duplicates; r++) for (const [id, body] of originals) add(id, body, 'duplicate', r);
  for (let v = 1; v <= options.reusedKeys; v++) {
    for (const id of ids) add(id, buildBody(options, id, v), 'reusedKey', options.duplicates + v);
  }
  return plan;
}

/** `path: message; path: message` from zod issues. */
export function formatIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(input)'}: ${i.message}`).join('; ');
}

/** The Service Bus message for a planned one: MessageId = business id, JSON body. */
export function toServiceBusMessage(planned: PlannedMessage): ServiceBusMessage {
  return {
    messageId: planned.messageId,
    body: planned.body,
    contentType: planned.contentType,
    subject: planned.subject,
    correlationId: planned.correlationId,
    applicationProperties: { ...planned.applicationProperties },
  };
}
