import { z } from 'zod';

/**
 * Message types on the `orders` queue, read from the Service Bus application property `type`.
 * A message without the property is an `OrderPlaced` (the seed's producers set none).
 */
export const OrderMessageType = {
  OrderPlaced: 'OrderPlaced',
  OrderStatusChanged: 'OrderStatusChanged',
} as const;
export type OrderMessageType = (typeof OrderMessageType)[keyof typeof OrderMessageType];

/** Absolute order statuses an `OrderStatusChanged` sets (never a relative change). */
export const OrderStatus = {
  Placed: 'placed',
  Paid: 'paid',
  Shipped: 'shipped',
  Delivered: 'delivered',
  Cancelled: 'cancelled',
} as const;
export type OrderStatus = (typeof OrderStatus)[keyof typeof OrderStatus];

/**
 * A transactional batch holds at most 100 operations: the order document, the audit entry and one
 * line document per item, so an order has at most 98 items.
 */
export const MAX_ORDER_ITEMS = 98;

/**
 * An order id is also the Cosmos document id and partition key value: ids are at most 255
 * characters and must not contain `/ \ ? #`; line ids append a suffix, hence 200.
 */
export const orderIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .refine((s) => s.trim().length > 0, 'must not be blank')
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .refine((s) => !/[/\\?#\u0000-\u001f\u007f]/.test(s), 'must not contain / \\ ? # or control characters');

const lineSchema = z.object({
  sku: z.string().trim().min(1, 'must not be empty').max(100),
  quantity: z.number().int('must be an integer').positive('must be positive'),
  /** Minor units (cents): an integer, never a float. */
  unitPrice: z.number().int('must be an integer in minor units').nonnegative('must not be negative'),
});

/** `OrderPlaced { orderId, customerId, items: [{ sku, quantity, unitPrice }], currency }`; MessageId = orderId. */
export const orderPlacedSchema = z
  .object({
    orderId: orderIdSchema,
    customerId: z.string().trim().min(1, 'must not be empty').max(200),
    items: z.array(lineSchema).min(1, 'must hold at least one item').max(MAX_ORDER_ITEMS, `must hold at most ${MAX_ORDER_ITEMS} items`),
    currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as EUR'),
  })
  .refine((o) => Number.isSafeInteger(orderTotalMinor(o.items)), { message: 'order total exceeds the safe integer range', path: ['items'] });
export type OrderPlaced = z.infer<typeof orderPlacedSchema>;
export type OrderLine = OrderPlaced['items'][number];

/** `OrderStatusChanged { orderId, status, version }`: absolute status, versions increase per order. */
export const orderStatusChangedSchema = z.object({
  orderId: orderIdSchema,
  status: z.enum([OrderStatus.Placed, OrderStatus.Paid, OrderStatus.Shipped, OrderStatus.Delivered, OrderStatus.Cancelled]),
  version: z.number().int('must be an integer').positive('must be positive').max(Number.MAX_SAFE_INTEGER),
});
export type OrderStatusChanged = z.infer<typeof orderStatusChangedSchema>;

/** Sum of quantity x unit price, in minor units. */
export function orderTotalMinor(items: ReadonlyArray<{ quantity: number; unitPrice: number }>): number {
  return items.reduce((sum, line) => sum + line.quantity * line.unitPrice, 0);
}

/**
 * Why the message type cannot be read from the trigger metadata, or `undefined` when it can: the body (an object:
 * the library parsed its JSON text) has a top-level field `applicationProperties` (in any case), and the Functions
 * host copies a JSON body's top-level fields over the trigger metadata before the handler sees it
 * (`Utility.ApplyBindingData`: see `azure-functions-idempotency`'s hostMetadata), so the `type` read there may be the
 * body's; or the body is text like a JSON object that `JSON.parse` refused and Json.NET may have read (it is lenient).
 */
export function typeShadowedByBody(body: unknown): string | undefined {
  if (typeof body === 'string' && /^\{[\s\S]*\}$/.test(body.trim())) {
    // Text like a JSON object that JSON.parse refused: Json.NET (comments, single quotes, bare names) may have read it.
    return (
      'the body is text that looks like a JSON object @azure/functions could not parse, which the Functions host may have read and copied ' +
      'over the trigger metadata (applicationProperties among its fields), so the message type (application property "type") cannot be told from the body'
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body) || Buffer.isBuffer(body)) return undefined;
  const field = Object.entries(body as Record<string, unknown>).find(
    ([name, value]) => name.toLowerCase() === 'applicationproperties' && value !== null && value !== undefined && !Array.isArray(value),
  );
  if (!field) return undefined;
  return (
    `the body has a top-level field ${JSON.stringify(field[0])}, which the Functions host copies over the trigger metadata, ` +
    'so the message type (application property "type") cannot be told from the body; rename the field or send the body as bytes'
  );
}

/**
 * The message type from trigger metadata (`applicationProperties.type`); absent means `OrderPlaced`. Check
 * {@link typeShadowedByBody} first.
 * @returns the type, or `{ unknown }` with the value found when it names no known type.
 */
export function orderMessageTypeOf(triggerMetadata: Readonly<Record<string, unknown>> | undefined): OrderMessageType | { unknown: string } {
  const props = triggerMetadata?.applicationProperties;
  const raw = props && typeof props === 'object' ? (props as Record<string, unknown>).type : undefined;
  if (raw === undefined || raw === null || raw === '') return OrderMessageType.OrderPlaced;
  if (raw === OrderMessageType.OrderPlaced || raw === OrderMessageType.OrderStatusChanged) return raw;
  return { unknown: (typeof raw === 'string' ? raw : JSON.stringify(raw)).slice(0, 100) };
}
