import { z } from 'zod';
import { InvalidKeyError } from '../core/errors';
import { payloadDigest } from '../core/digest';
import type { IdempotencyKey } from '../core/keys';
import type { InvocationContextLike } from '../core/invocationKey';
import { defaultBatchEventKey } from '../core/triggerKeys';
import { decodeBody } from '../messaging/body';
import { ParkReason } from '../messaging/ParkingStore';

/** The CloudEvent type this consumer applies; other types on the hub are not its business (ignored). */
export const PAYMENT_SUCCEEDED = 'PaymentSucceeded';

/** The data of a `PaymentSucceeded` event (amount in minor units, e.g. cents). */
export const paymentSucceededSchema = z.object({
  paymentId: z.string().min(1).max(200),
  customerId: z.string().min(1).max(200),
  amount: z.number().int().positive().max(1e12),
  currency: z.string().length(3),
});
export type PaymentSucceeded = z.infer<typeof paymentSucceededSchema>;

/** One point per whole currency unit. */
export function pointsFor(amountMinor: number): number {
  return Math.floor(amountMinor / 100);
}

/** A decoded event: its key (CloudEvent source + id), the digest of its data, whose balance it changes and by how much. */
export interface RewardEvent {
  readonly index: number;
  readonly key: IdempotencyKey;
  readonly digest: string;
  readonly customerId: string;
  readonly paymentId: string;
  readonly points: number;
}

export type DecodedReward =
  | { readonly ok: true; readonly event: RewardEvent }
  | { readonly ok: false; readonly ignored: true; readonly type: string }
  | { readonly ok: false; readonly ignored: false; readonly reason: ParkReason; readonly detail: string };

/**
 * Decodes event `index` of a batch: its key first (structured CloudEvent, or binary `cloudEvents:*`
 * properties; never the partition, offset or sequence number, which a producer's retry changes and which
 * name a position in one hub, not the payment), then its type, then its data by schema.
 */
export function decodeRewardEvent(consumer: string, body: unknown, index: number, context: InvocationContextLike | undefined): DecodedReward {
  let key: IdempotencyKey;
  try {
    key = defaultBatchEventKey(consumer, body, index, context);
  } catch (error) {
    if (!(error instanceof InvalidKeyError)) throw error;
    return { ok: false, ignored: false, reason: ParkReason.MissingEventId, detail: error.message };
  }
  const structured = typeof body === 'object' && body !== null && 'specversion' in body;
  const properties = (Array.isArray(context?.triggerMetadata?.propertiesArray) ? context.triggerMetadata.propertiesArray[index] : undefined) as
    Record<string, unknown> | undefined;
  const type = structured ? (body as { type?: unknown }).type : (properties?.['cloudEvents:type'] ?? properties?.cloudEvents_type);
  if (type !== PAYMENT_SUCCEEDED) return { ok: false, ignored: true, type: String(type) };
  const decoded = decodeBody(structured ? (body as { data?: unknown }).data : body, paymentSucceededSchema);
  if (!decoded.ok) return { ok: false, ignored: false, reason: decoded.reason, detail: decoded.detail };
  const data = decoded.value;
  return {
    ok: true,
    event: { index, key, digest: payloadDigest(data), customerId: data.customerId, paymentId: data.paymentId, points: pointsFor(data.amount) },
  };
}
