import { InvalidKeyError } from './errors';
import { keyFromCloudEvent, keyFromMessageId, type IdempotencyKey } from './keys';

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

/** A structured CloudEvent (JSON with `specversion`, `source`, `id`), e.g. an Event Grid CloudEvents trigger's event. */
function structuredCloudEvent(message: unknown): { source: unknown; id: unknown } | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const event = message as Record<string, unknown>;
  return typeof event.specversion === 'string' && 'source' in event && 'id' in event ? { source: event.source, id: event.id } : undefined;
}

/** A CloudEvent in binary mode over AMQP (Service Bus): application properties `cloudEvents:source` and `cloudEvents:id`. */
function binaryCloudEvent(meta: Readonly<Record<string, unknown>>): { source: unknown; id: unknown } | undefined {
  const props = meta.applicationProperties;
  if (typeof props !== 'object' || props === null) return undefined;
  const p = props as Record<string, unknown>;
  return 'cloudEvents:source' in p && 'cloudEvents:id' in p ? { source: p['cloudEvents:source'], id: p['cloudEvents:id'] } : undefined;
}

/**
 * The default key of one invocation, scoped by `consumer`, in this order:
 * 1. a CloudEvent: `source` + `id` of the message (structured mode) or of the Service Bus application
 *    properties `cloudEvents:source` / `cloudEvents:id` (binary mode);
 * 2. `context.triggerMetadata.messageId` (Service Bus; set it to the business id when sending).
 * Never the lock token, delivery count, enqueue time or invocation id: they change per delivery.
 * @throws InvalidKeyError when neither is there (pass `keyOf`), or when the one found is not a valid key.
 */
export function defaultInvocationKey(consumer: string, message: unknown, context: InvocationContextLike | undefined): IdempotencyKey {
  const meta = context?.triggerMetadata ?? {};
  const event = structuredCloudEvent(message) ?? binaryCloudEvent(meta);
  if (event) return keyFromCloudEvent(consumer, event);
  if (meta.messageId !== undefined && meta.messageId !== null) return keyFromMessageId(consumer, meta.messageId);
  throw new InvalidKeyError(
    context
      ? 'no idempotency key: the trigger metadata has no messageId and the message is not a CloudEvent; pass keyOf to makeIdempotent'
      : 'no idempotency key: no InvocationContext among the arguments (a Functions v4 handler gets it second); pass keyOf to makeIdempotent',
  );
}

/** Service Bus `deliveryCount` of the invocation (1 on the first delivery), if the trigger says it. */
export function deliveryCountOf(context: InvocationContextLike | undefined): number | undefined {
  const count = Number(context?.triggerMetadata?.deliveryCount);
  return Number.isFinite(count) ? count : undefined;
}
