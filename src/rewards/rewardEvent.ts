import { z } from 'zod';
import { InvalidKeyError, payloadDigest, type IdempotencyKey, type InvocationContextLike, defaultBatchEventKey } from 'azure-functions-idempotency';
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
  /** Where the event was read (partition and sequence number), when the trigger metadata says: never its key. */
  readonly position?: EventPosition;
  /** When this copy was enqueued in the hub (`enqueuedTimeUtcArray`), epoch ms: it can be read again until then + the hub's retention. */
  readonly enqueuedAtMs?: number;
}

/** An event's place in the hub: tells a replay (the same place again) from a producer's resend (another place). */
export interface EventPosition {
  readonly partitionId: string;
  readonly sequenceNumber: number;
}

export type DecodedReward =
  | { readonly ok: true; readonly event: RewardEvent }
  | { readonly ok: false; readonly ignored: true; readonly type: string }
  | { readonly ok: false; readonly ignored: false; readonly reason: ParkReason; readonly detail: string };

/**
 * Decodes event `index` of a batch: its key first (structured CloudEvent, or binary `cloudEvents:*`
 * properties; never the partition, offset or sequence number, which a producer's retry changes and which
 * name a position in one hub, not the payment), then its type, then its data by schema. With `eventCount` (the
 * batch's length) a batch whose metadata arrays are longer than it (the host dropped an empty text event but kept
 * its `propertiesArray` entry) parks its binary-mode events rather than read a neighbour's `cloudEvents:*` properties.
 */
export function decodeRewardEvent(
  consumer: string,
  delivered: unknown,
  index: number,
  context: InvocationContextLike | undefined,
  eventCount?: number,
): DecodedReward {
  const body = parsedIfJson(delivered);
  let key: IdempotencyKey;
  try {
    key = defaultBatchEventKey(consumer, body, index, context, eventCount);
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
    event: {
      index,
      key,
      digest: payloadDigest(data),
      customerId: data.customerId,
      paymentId: data.paymentId,
      points: pointsFor(data.amount),
      // Read by position only from metadata that lines up with the batch (a dropped empty body shifts it).
      position: linedUp(context, eventCount) ? positionOf(index, context) : undefined,
      enqueuedAtMs: linedUp(context, eventCount) ? enqueuedAtOf(index, context) : undefined,
    },
  };
}

/**
 * A body delivered as text or bytes (`dataType: 'binary'`, or a host that hands over strings) parsed when it is
 * JSON, so a structured CloudEvent is read the same whatever the binding's data type; anything else as delivered.
 */
function parsedIfJson(body: unknown): unknown {
  if (typeof body !== 'string' && !Buffer.isBuffer(body) && !(body instanceof Uint8Array)) return body;
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return body;
  }
}

/** The partition (`partitionContext.partitionId`) and sequence number (`sequenceNumberArray[index]`) of event `index`. */
export function positionOf(index: number, context: InvocationContextLike | undefined): EventPosition | undefined {
  const meta = context?.triggerMetadata ?? {};
  const partitionId = (meta.partitionContext as { partitionId?: unknown } | undefined)?.partitionId;
  const sequenceNumber = Array.isArray(meta.sequenceNumberArray) ? Number(meta.sequenceNumberArray[index]) : NaN;
  return typeof partitionId === 'string' && Number.isSafeInteger(sequenceNumber) ? { partitionId, sequenceNumber } : undefined;
}

/** The enqueue time of event `index` (`enqueuedTimeUtcArray[index]`), epoch ms; undefined when unknown or misaligned. */
function enqueuedAtOf(index: number, context: InvocationContextLike | undefined): number | undefined {
  const times = context?.triggerMetadata?.enqueuedTimeUtcArray;
  const ms = Array.isArray(times) && typeof times[index] === 'string' ? Date.parse(times[index]) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/** Whether no metadata array of the batch is longer than its `eventCount` events (unknown count: assumed). */
function linedUp(context: InvocationContextLike | undefined, eventCount: number | undefined): boolean {
  if (eventCount === undefined) return true;
  return Object.entries(context?.triggerMetadata ?? {}).every(
    ([name, value]) => !name.endsWith('Array') || !Array.isArray(value) || value.length <= eventCount,
  );
}
