import type { z } from 'zod';
import { InvalidKeyError, assertMetadataNotFromBody, keyFromMessageId, type IdempotencyKey } from 'azure-functions-idempotency';
import { decodeBody } from './body';
import { park, type Delivery } from './delivery';
import { messageIdText } from './messageInfo';
import { ParkReason } from './ParkingStore';
import type { Outcome } from './reportOutcome';

/** How a consumer's message names its business id (which must be its MessageId). */
export interface KeyedMessageSchema<T> {
  readonly schema: z.ZodType<T>;
  /** The business id in the body, e.g. the paymentId. */
  readonly idOf: (value: T) => string;
  /** Its name in details, e.g. `paymentId`. */
  readonly idName: string;
  /** Largest body accepted (default `DEFAULT_MAX_BODY_BYTES`). */
  readonly maxBodyBytes?: number;
}

/** A message the consumer can claim, or the outcome of parking it. */
export type KeyedMessage<T> =
  | { readonly ok: true; readonly key: IdempotencyKey; readonly value: T }
  | { readonly ok: false; readonly outcome: Outcome; readonly reason: ParkReason; readonly detail: string };

/**
 * The first steps of the pipeline: the key (consumer + MessageId), then the body (size, JSON,
 * schema), which must carry the MessageId as its business id. What fails is parked with its reason
 * (`missing-message-id`, also when the body has a `messageId` field the host copied over the metadata's,
 * `invalid-json`, `invalid-schema`, `oversized`, `message-id-mismatch`).
 * @throws StoreUnavailableError when parking fails (the message is then redelivered).
 */
export async function decodeKeyedMessage<T>(delivery: Delivery, message: KeyedMessageSchema<T>): Promise<KeyedMessage<T>> {
  const refuse = async (reason: ParkReason, detail: string, idempotencyKey?: string): Promise<KeyedMessage<T>> => ({
    ok: false,
    outcome: await park(delivery, reason, detail, { idempotencyKey }),
    reason,
    detail,
  });
  const messageId = messageIdText(delivery.info);
  if (messageId === undefined) return refuse(ParkReason.MissingMessageId, `the message has no MessageId (the producer must set it to the ${message.idName})`);
  let key: IdempotencyKey;
  try {
    // A JSON body's top-level messageId (any case) replaces the metadata's before the handler sees it (core/hostMetadata.ts).
    assertMetadataNotFromBody(delivery.body, ['messageId'], 'Service Bus MessageId');
    key = keyFromMessageId(delivery.consumer, delivery.info.messageId);
  } catch (error) {
    if (!(error instanceof InvalidKeyError)) throw error;
    return refuse(ParkReason.MissingMessageId, error.message);
  }
  const decoded = decodeBody(delivery.body, message.schema, message.maxBodyBytes);
  if (!decoded.ok) return refuse(decoded.reason, decoded.detail, key.key);
  const id = message.idOf(decoded.value);
  if (id !== key.key)
    return refuse(ParkReason.MessageIdMismatch, `MessageId ${JSON.stringify(key.key)} is not the body's ${message.idName} ${JSON.stringify(id)}`, key.key);
  return { ok: true, key, value: decoded.value };
}
