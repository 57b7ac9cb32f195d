import { InvalidKeyError } from './errors';

/** Longest raw key accepted, in UTF-16 code units (a Table string property holds 32K). */
export const MAX_KEY_LENGTH = 8192;
/** Longest consumer name accepted. */
export const MAX_CONSUMER_LENGTH = 128;

/**
 * An idempotency key scoped by the consumer that processes it: two consumers of one message
 * (publish/subscribe) each get their own record, so neither blocks the other.
 */
export interface IdempotencyKey {
  /** The consumer's stable name, e.g. `payments`. */
  readonly consumer: string;
  /** The business-level key, e.g. the Service Bus `MessageId` set to the payment id. */
  readonly key: string;
}

function requireNonEmptyString(value: unknown, what: string, maxLength: number): string {
  if (value === undefined || value === null) throw new InvalidKeyError(`${what} is missing`);
  if (typeof value !== 'string') throw new InvalidKeyError(`${what} must be a string, got ${typeof value}`);
  if (value.trim().length === 0) throw new InvalidKeyError(`${what} is empty`);
  if (value.length > maxLength) throw new InvalidKeyError(`${what} is ${value.length} characters, more than ${maxLength}`);
  return value;
}

function scoped(consumer: unknown, key: string): IdempotencyKey {
  return { consumer: requireNonEmptyString(consumer, 'consumer name', MAX_CONSUMER_LENGTH), key };
}

/**
 * Key from a Service Bus `MessageId`, which the producer sets to the business id.
 * Numbers are accepted as their decimal form; anything else (missing, empty, binary) throws.
 * @throws InvalidKeyError
 */
export function keyFromMessageId(consumer: string, messageId: unknown): IdempotencyKey {
  const id = typeof messageId === 'number' && Number.isFinite(messageId) ? String(messageId) : messageId;
  return scoped(consumer, requireNonEmptyString(id, 'MessageId', MAX_KEY_LENGTH));
}

/**
 * Key from a CloudEvent: `source` and `id` together identify an event (ids are unique per source).
 * The two are joined unambiguously, so (`a/b`, `c`) and (`a`, `b/c`) never meet.
 * @throws InvalidKeyError
 */
export function keyFromCloudEvent(consumer: string, event: { source?: unknown; id?: unknown }): IdempotencyKey {
  const source = requireNonEmptyString(event?.source, 'CloudEvent source', MAX_KEY_LENGTH);
  const id = requireNonEmptyString(event?.id, 'CloudEvent id', MAX_KEY_LENGTH);
  return scoped(consumer, requireNonEmptyString(JSON.stringify([source, id]), 'CloudEvent key', MAX_KEY_LENGTH));
}

/**
 * Key from a business-key function over the payload (e.g. `p => p.paymentId`).
 * The function must return a non-empty string or a finite number.
 * @throws InvalidKeyError
 */
export function keyFromBusinessKey<T>(consumer: string, payload: T, businessKey: (payload: T) => unknown): IdempotencyKey {
  let value: unknown;
  try {
    value = businessKey(payload);
  } catch (cause) {
    throw new InvalidKeyError('business-key function threw', { cause });
  }
  const id = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  return scoped(consumer, requireNonEmptyString(id, 'business key', MAX_KEY_LENGTH));
}

/** The scoped key as one unambiguous string: used for hashing, logs and record ids. */
export function scopedKeyString(key: IdempotencyKey): string {
  return `${key.consumer.length}:${key.consumer}:${key.key}`;
}
