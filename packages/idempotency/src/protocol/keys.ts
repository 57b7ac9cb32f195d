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

/** A UTF-16 surrogate without its partner: it has no UTF-8 form (it would hash as U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function requireNonEmptyString(value: unknown, what: string, maxLength: number): string {
  if (value === undefined || value === null) throw new InvalidKeyError(`${what} is missing`);
  if (typeof value !== 'string') throw new InvalidKeyError(`${what} must be a string, got ${typeof value}`);
  if (value.trim().length === 0) throw new InvalidKeyError(`${what} is empty`);
  if (value.length > maxLength) throw new InvalidKeyError(`${what} is ${value.length} characters, more than ${maxLength}`);
  const surrogate = LONE_SURROGATE.exec(value);
  if (surrogate) {
    const code = surrogate[0].charCodeAt(0).toString(16).toUpperCase();
    throw new InvalidKeyError(`${what} has a lone UTF-16 surrogate U+${code} at index ${surrogate.index}: it is not valid Unicode text`);
  }
  return value;
}

function requireConsumer(value: unknown): string {
  const consumer = requireNonEmptyString(value, 'consumer name', MAX_CONSUMER_LENGTH);
  if (consumer.trim() !== consumer) throw new InvalidKeyError(`consumer name ${JSON.stringify(consumer)} has leading or trailing white space`);
  return consumer;
}

function scoped(consumer: unknown, key: string): IdempotencyKey {
  return { consumer: requireConsumer(consumer), key };
}

/**
 * Checks a key built by hand the way the helpers build theirs; the store calls it at every entry
 * point. Rules: `consumer` a non-empty string of at most {@link MAX_CONSUMER_LENGTH} characters with
 * no leading or trailing white space; `key` a string with a non-blank character, at most
 * {@link MAX_KEY_LENGTH} characters; neither holds a lone UTF-16 surrogate.
 * @throws InvalidKeyError naming what is wrong.
 */
export function assertValidKey(key: unknown): asserts key is IdempotencyKey {
  if (typeof key !== 'object' || key === null)
    throw new InvalidKeyError(`an idempotency key must be an object { consumer, key }, got ${key === null ? 'null' : typeof key}`);
  const { consumer, key: value } = key as Record<string, unknown>;
  requireConsumer(consumer);
  requireNonEmptyString(value, 'key', MAX_KEY_LENGTH);
}

/**
 * Key from a Service Bus `MessageId`, which the producer sets to the business id.
 * A number is accepted as its decimal form when it is a safe integer: `@azure/functions` parses metadata text
 * that is JSON, so a MessageId "42" arrives as 42; a larger integer has lost digits on the way ("12345678901234567891"
 * arrives as 12345678901234567000) and a fraction or exponent is not the text that was sent, so both are refused.
 * Anything else (missing, empty, binary) throws.
 * @throws InvalidKeyError
 */
export function keyFromMessageId(consumer: string, messageId: unknown): IdempotencyKey {
  if (typeof messageId === 'number' && !Number.isSafeInteger(messageId)) {
    throw new InvalidKeyError(
      `MessageId reached the handler as the number ${messageId}, not a safe integer: @azure/functions parses metadata text that is JSON, ` +
        'so its digits or its form were lost on the way and two MessageIds may meet; use MessageIds that are not JSON numbers, or pass keyOf',
    );
  }
  const id = typeof messageId === 'number' ? String(messageId) : messageId;
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
