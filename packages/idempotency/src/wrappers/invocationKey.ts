import { InvalidKeyError } from '../protocol/errors';
import { assertMetadataNotFromBody, fieldsCopiedFromBody, jsonObjectOf } from './hostMetadata';
import { keyFromCloudEvent, keyFromMessageId, type IdempotencyKey } from '../protocol/keys';

/**
 * What the wrapper reads of a Functions v4 `InvocationContext` (structurally, so the core needs no
 * `@azure/functions`): the trigger's metadata, e.g. Service Bus `messageId` and `deliveryCount`.
 */
export interface InvocationContextLike {
  readonly invocationId?: string;
  readonly triggerMetadata?: Readonly<Record<string, unknown>>;
}

/** The invocation context among a handler's arguments: the last one with `triggerMetadata` (v4 passes it second). */
export function invocationContextOf(args: readonly unknown[]): InvocationContextLike | undefined {
  for (let i = args.length - 1; i >= 0; i--) {
    const arg = args[i];
    if (typeof arg === 'object' && arg !== null && 'triggerMetadata' in arg) return arg as InvocationContextLike;
  }
  return undefined;
}

/** A CloudEvent's identity as the message carries it (either may be missing: then it is refused). */
export interface CloudEventIdentity {
  readonly mode: 'structured' | 'binary';
  readonly source: unknown;
  readonly id: unknown;
}

/**
 * A structured CloudEvent (JSON with `specversion`, e.g. an Event Grid CloudEvents trigger's event), or a
 * body the trigger says is one (content type `application/cloudevents+json`).
 */
export function structuredCloudEvent(message: unknown, meta: Readonly<Record<string, unknown>>): CloudEventIdentity | undefined {
  const declared = typeof meta.contentType === 'string' && /^application\/cloudevents(\+|;|$)/i.test(meta.contentType);
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    return declared ? { mode: 'structured', source: undefined, id: undefined } : undefined;
  }
  const event = message as Record<string, unknown>;
  return declared || 'specversion' in event ? { mode: 'structured', source: event.source, id: event.id } : undefined;
}

/** Prefixes of CloudEvent attributes in binary mode over AMQP (`cloudEvents:`; `cloudEvents_` where `:` is not allowed). */
const BINARY_PREFIXES = ['cloudEvents:', 'cloudEvents_'] as const;

/**
 * A CloudEvent in binary mode over AMQP (Service Bus): any application property `cloudEvents:*` (or
 * `cloudEvents_*`) says the message is one; its identity is `cloudEvents:source` and `cloudEvents:id`.
 */
export function binaryCloudEvent(meta: Readonly<Record<string, unknown>>): CloudEventIdentity | undefined {
  // `userProperties` is the name older Service Bus extensions gave the application properties.
  return binaryCloudEventOf(meta.applicationProperties) ?? binaryCloudEventOf(meta.userProperties);
}

/** A CloudEvent in binary mode in one message's application properties (see {@link binaryCloudEvent}). */
export function binaryCloudEventOf(props: unknown): CloudEventIdentity | undefined {
  if (typeof props !== 'object' || props === null) return undefined;
  const p = props as Record<string, unknown>;
  const prefix = BINARY_PREFIXES.find((candidate) => Object.keys(p).some((name) => name.startsWith(candidate)));
  return prefix === undefined ? undefined : { mode: 'binary', source: p[`${prefix}source`], id: p[`${prefix}id`] };
}

/**
 * The default key of one invocation, scoped by `consumer`, in this order:
 * 1. a CloudEvent: `source` + `id` of the message (structured mode: the message, also delivered as bytes or
 *    text, has `specversion`, or the content type is `application/cloudevents+json`) or of the Service Bus
 *    application properties `cloudEvents:source` / `cloudEvents:id` (binary mode: any `cloudEvents:*` property is there);
 * 2. `context.triggerMetadata.messageId` (Service Bus; set it to the business id when sending).
 * A message that is a CloudEvent but lacks its `source` or `id` is refused, never keyed by its messageId:
 * a broker may assign message ids, so the same event re-sent would run twice.
 * Metadata a text body may have replaced (the host copies a JSON body's top-level fields over it, ignoring case:
 * `hostMetadata.ts`) is never read: a body with a `messageId` or `applicationProperties` field is refused.
 * Never the lock token, delivery count, enqueue time or invocation id: they change per delivery.
 * @throws InvalidKeyError when neither is there (pass `keyOf`), when a CloudEvent lacks its identity, when the
 *   body may have replaced the metadata read, or when the key found is not a valid key.
 */
export function defaultInvocationKey(consumer: string, message: unknown, context: InvocationContextLike | undefined): IdempotencyKey {
  const meta = context?.triggerMetadata ?? {};
  const copied = fieldsCopiedFromBody(message);
  const contentTypeFromBody = !copied.known || copied.names.has('contenttype');
  const structured = structuredCloudEvent(jsonObjectOf(message) ?? message, contentTypeFromBody ? {} : meta);
  if (structured) return cloudEventKey(consumer, structured);
  // A body field may have added cloudEvents:* properties, or hidden the real ones (then messageId would be read).
  if (!copied.known || copied.names.has('applicationproperties') || copied.names.has('userproperties')) {
    assertMetadataNotFromBody(message, ['applicationProperties', 'userProperties'], 'Service Bus');
  }
  const event = binaryCloudEvent(meta);
  if (event) return cloudEventKey(consumer, event);
  if (meta.messageId !== undefined && meta.messageId !== null) {
    assertMetadataNotFromBody(message, ['messageId'], 'Service Bus MessageId');
    return keyFromMessageId(consumer, meta.messageId);
  }
  throw new InvalidKeyError(
    context
      ? 'no idempotency key: the trigger metadata has no messageId and the message is not a CloudEvent; pass keyOf to makeIdempotent'
      : 'no idempotency key: no InvocationContext among the arguments (a Functions v4 handler gets it second); pass keyOf to makeIdempotent',
  );
}

/** The key of a CloudEvent. @throws InvalidKeyError saying which attribute is missing or invalid, and in which mode. */
export function cloudEventKey(consumer: string, event: CloudEventIdentity): IdempotencyKey {
  try {
    return keyFromCloudEvent(consumer, event);
  } catch (error) {
    if (!(error instanceof InvalidKeyError)) throw error;
    const where = event.mode === 'structured' ? 'the event (structured mode)' : 'the application properties cloudEvents:source / cloudEvents:id (binary mode)';
    throw new InvalidKeyError(
      `incomplete CloudEvent: ${error.message} in ${where}. A CloudEvent is identified by source + id; without them it is refused ` +
        "(a malformed message: park or dead-letter it), never keyed by the broker's messageId, which changes when the event is re-sent",
      { cause: error },
    );
  }
}

/** Service Bus `deliveryCount` of the invocation (1 on the first delivery), if the trigger says it. */
export function deliveryCountOf(context: InvocationContextLike | undefined): number | undefined {
  const count = Number(context?.triggerMetadata?.deliveryCount);
  return Number.isFinite(count) ? count : undefined;
}
