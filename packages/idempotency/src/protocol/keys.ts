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
 * Key from a Service Bus `MessageId` (or a queue message id), which the producer sets to the business id: the exact
 * string the broker saw. The broker deduplicates on that string, so must we. A number is refused:
 * `@azure/functions` JSON-parses metadata text (`fromRpcTypedData`), so the MessageIds "42", "42.0", "4.2e1" and
 * " 42" all arrive as 42, "-0" as 0, "1e3" as 1000: the text the broker saw is lost, and any key made from the
 * number could merge two messages. Use MessageIds that are not JSON numbers (`order-42`), or pass `keyOf`.
 * Anything else that is not a non-empty string (missing, empty, binary, `true`) throws too.
 * Known limit: a MessageId that is itself a JSON string literal (`"abc"`, quotes included) arrives as `abc`; the
 * library gives no way to tell it from the MessageId `abc`.
 * @throws InvalidKeyError
 */
export function keyFromMessageId(consumer: string, messageId: unknown): IdempotencyKey {
  if (typeof messageId === 'number') {
    throw new InvalidKeyError(
      `MessageId arrived as the number ${Object.is(messageId, -0) ? '-0' : String(messageId)}: @azure/functions parses metadata text that is JSON, ` +
        'so the text the broker saw is lost ("42", "42.0", "4.2e1" and " 42" all arrive as 42) and two MessageIds could share a key; ' +
        'use MessageIds that are not JSON numbers (e.g. "order-42"), or pass keyOf (a business id in the body)',
    );
  }
  return scoped(consumer, requireNonEmptyString(messageId, 'MessageId', MAX_KEY_LENGTH));
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
