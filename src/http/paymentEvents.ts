import { z } from 'zod';

/**
 * A payment provider webhook event. `id` is the provider's event id (the dedup key; a redelivery carries
 * the same id); `data.version` is the charge's version at the provider (1 when it succeeded, +1 per later
 * change such as a refund), which orders events that arrive out of order.
 */
export const PaymentEventSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1-128 characters of A-Z a-z 0-9 . _ : -'),
  type: z.enum(['charge.succeeded', 'charge.refunded']),
  created: z.number().int().nonnegative(),
  data: z.object({
    paymentId: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1-128 characters of A-Z a-z 0-9 . _ : -'),
    chargeId: z.string().min(1).max(128),
    amount: z.number().int().positive(),
    currency: z.string().regex(/^[A-Z]{3}$/),
    version: z.number().int().min(1),
    refundedAmount: z.number().int().nonnegative().optional(),
  }),
});
export type PaymentEvent = z.infer<typeof PaymentEventSchema>;

/** The event types this app applies; a signed event of any other type is acknowledged and ignored. */
export const HANDLED_EVENT_TYPES: ReadonlySet<string> = new Set(PaymentEventSchema.shape.type.options);

/** What every provider event has, whatever its type: its id and type (to acknowledge one not handled). */
export const EventEnvelopeSchema = z.object({
  id: PaymentEventSchema.shape.id,
  type: z.string().min(1).max(128),
});
