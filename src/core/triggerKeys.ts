import { InvalidKeyError } from './errors';
import { binaryCloudEventOf, cloudEventKey, structuredCloudEvent, type InvocationContextLike } from './invocationKey';
import { keyFromBusinessKey, keyFromMessageId, type IdempotencyKey } from './keys';

/**
 * Keys for every trigger: each trigger's stable identity of one logical operation, as `@azure/functions`
 * v4 delivers it (`triggerMetadata` camel-cased). Where a trigger has no stable identity the function
 * refuses to guess (`InvalidKeyError`) and says which option to give. Never a value that changes on
 * redelivery (lock token, pop receipt, dequeue or delivery count, offset, sequence number, receive time).
 *
 * | trigger | identity | why |
 * |---|---|---|
 * | Service Bus | `messageId` | set by the producer to the business id (see `keyFromMessageId`) |
 * | Event Hubs | CloudEvent `source` + `id` (body, or `cloudEvents:*` properties) | offset and sequence number are new when a producer's retry appends the event again, and differ per replica; the partition is the producer's choice |
 * | Event Grid | CloudEvents: `source` + `id`; Event Grid schema: `topic` + `id` | ids are unique per source / topic; redeliveries keep them |
 * | Storage queue | the message `id` | kept across dequeues (pop receipt and dequeue count change); a producer that enqueues twice makes two ids: key by the body then |
 * | Timer | function name + the occurrence (`scheduleStatus.next` during the run) | an overlapping or restarted run of the same occurrence is the same work |
 * | Cosmos DB change feed | document `_rid` (or `id`) + `_lsn` | a version of a document; a replay from the lease checkpoint repeats the version, a new write makes a new one |
 * | Blob | blob path + ETag | the same content version; a new upload is new work (as the host's blob receipts) |
 */

function metaOf(context: InvocationContextLike | undefined): Readonly<Record<string, unknown>> {
  return context?.triggerMetadata ?? {};
}

function at(array: unknown, index: number): unknown {
  return Array.isArray(array) ? (array[index] as unknown) : undefined;
}

/**
 * The key of event `index` of an Event Hubs batch (`cardinality: 'many'`): its CloudEvent identity, from a
 * structured event (the body has `specversion`) or from binary mode (`triggerMetadata.propertiesArray[index]`
 * holds `cloudEvents:*` properties). @throws InvalidKeyError when the event is not a CloudEvent (pass `keyOf`:
 * a business id in the body) or lacks its `source` or `id`.
 */
export function defaultBatchEventKey(consumer: string, event: unknown, index: number, context: InvocationContextLike | undefined): IdempotencyKey {
  const meta = metaOf(context);
  const identity = structuredCloudEvent(event, {}) ?? binaryCloudEventOf(at(meta.propertiesArray, index)) ?? binaryCloudEventOf(meta.properties);
  if (identity) return cloudEventKey(consumer, identity);
  throw new InvalidKeyError(
    `event ${index} has no stable identity: it is not a CloudEvent, and its offset and sequence number are new when a producer's retry ` +
      'appends it again (they are never a key); send CloudEvents (source + id) or pass keyOf (a business id in the body)',
  );
}

/**
 * The key of an Event Grid event: CloudEvents schema -> `source` + `id`; Event Grid schema -> `topic` + `id`.
 * @throws InvalidKeyError for an event without its identity.
 */
export function eventGridEventKey(consumer: string, event: unknown): IdempotencyKey {
  const cloudEvent = structuredCloudEvent(event, {});
  if (cloudEvent) return cloudEventKey(consumer, cloudEvent);
  const e = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>;
  if ('eventType' in e || 'dataVersion' in e) {
    if (typeof e.topic !== 'string' || e.topic === '' || typeof e.id !== 'string' || e.id === '') {
      throw new InvalidKeyError('Event Grid event without its topic or id: refused (Event Grid fills both on delivery; pass keyOf otherwise)');
    }
    return keyFromBusinessKey(consumer, JSON.stringify([e.topic, e.id]), (text) => text);
  }
  throw new InvalidKeyError('not an Event Grid event (no specversion, no eventType): pass keyOf');
}

/** The key of a Storage queue message: its `id`, kept across dequeues. @throws InvalidKeyError without one */
export function storageQueueMessageKey(consumer: string, context: InvocationContextLike | undefined): IdempotencyKey {
  const id = metaOf(context).id;
  if (typeof id !== 'string' || id === '') throw new InvalidKeyError('queue trigger metadata has no message id: pass keyOf (a business id in the body)');
  return keyFromMessageId(consumer, id);
}

/**
 * The key of a timer run: the function and the occurrence it runs for. During a run the host's schedule
 * status says `last` (the previous occurrence) and `next` (this one, also for a past-due run after a
 * restart): so two runs of one occurrence (overlapping instances, a restart) share the key (read from the
 * WebJobs timer listener, `TimerListener.InvokeJobFunction`: the status is updated only after the run).
 * A `runOnStartup` run sees the coming occurrence as `next` and would share its key: give it its own keyOf.
 * @throws InvalidKeyError when the timer has no schedule status (`useMonitor: false`): pass keyOf.
 */
export function timerOccurrenceKey(consumer: string, functionName: string, timer: unknown): IdempotencyKey {
  const status = (timer as { scheduleStatus?: { next?: unknown } } | undefined)?.scheduleStatus;
  const next = status?.next;
  const ms = typeof next === 'string' ? Date.parse(next) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new InvalidKeyError('the timer has no schedule status (useMonitor is off, or a manual run): its occurrence is unknown; pass keyOf');
  }
  return keyFromBusinessKey(consumer, JSON.stringify([functionName, new Date(ms).toISOString()]), (text) => text);
}

/** The key of one Cosmos DB change feed document version: `_rid` (else `id`) + `_lsn`. @throws InvalidKeyError */
export function cosmosChangeKey(consumer: string, document: unknown): IdempotencyKey {
  const d = (typeof document === 'object' && document !== null ? document : {}) as Record<string, unknown>;
  const id = typeof d._rid === 'string' && d._rid !== '' ? d._rid : d.id;
  const lsn = d._lsn;
  if (typeof id !== 'string' || id === '' || (typeof lsn !== 'number' && typeof lsn !== 'string')) {
    throw new InvalidKeyError('change feed document without _rid/id or _lsn: its version is unknown; pass keyOf');
  }
  return keyFromBusinessKey(consumer, JSON.stringify([id, String(lsn)]), (text) => text);
}

/** The key of a blob trigger run: the blob's path and ETag (one content version). @throws InvalidKeyError */
export function blobVersionKey(consumer: string, context: InvocationContextLike | undefined): IdempotencyKey {
  const meta = metaOf(context);
  const properties = (meta.properties ?? {}) as Record<string, unknown>;
  const etag = properties.eTag ?? properties.etag ?? properties.ETag;
  const path = meta.blobTrigger ?? meta.uri;
  if (typeof path !== 'string' || path === '' || typeof etag !== 'string' || etag === '') {
    throw new InvalidKeyError('blob trigger metadata without the blob path or its ETag: pass keyOf');
  }
  return keyFromBusinessKey(consumer, JSON.stringify([path, etag]), (text) => text);
}
