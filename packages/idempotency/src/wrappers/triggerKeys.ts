import { InvalidKeyError } from '../protocol/errors';
import { assertMetadataNotFromBody, batchMisalignment, jsonObjectOf } from './hostMetadata';
import { binaryCloudEventOf, cloudEventKey, structuredCloudEvent, type InvocationContextLike } from './invocationKey';
import { keyFromBusinessKey, keyFromMessageId, type IdempotencyKey } from '../protocol/keys';

/**
 * Keys for every trigger: each trigger's stable identity of one logical operation, as `@azure/functions`
 * v4 delivers it (`triggerMetadata` camel-cased). Where a trigger has no stable identity the function
 * refuses to guess (`InvalidKeyError`) and says which option to give. Never a value that changes on
 * redelivery (lock token, pop receipt, dequeue or delivery count, offset, sequence number, receive time).
 * Each reads the metadata as the host really sends it (`hostMetadata.ts`): never a field a text body may
 * have replaced, never a batch's metadata by position when it does not line up with the events.
 *
 * | trigger | identity | why |
 * |---|---|---|
 * | Service Bus | `messageId` (refused when the body has a `messageId` field: the host copies it over) | set by the producer to the business id (see `keyFromMessageId`) |
 * | Event Hubs | CloudEvent `source` + `id` (body, also as bytes; or `cloudEvents:*` properties, refused when the batch's metadata does not line up) | offset and sequence number are new when a producer's retry appends the event again, and differ per replica; the partition is the producer's choice |
 * | Event Grid | CloudEvents: `source` + `id`; Event Grid schema: `topic` + `id` | ids are unique per source / topic; redeliveries keep them |
 * | Storage queue | the message `id` (refused when the body has an `id` field) | kept across dequeues (pop receipt and dequeue count change); a producer that enqueues twice makes two ids: key by the body then |
 * | Timer | function name + the occurrence (`scheduleStatus.next` during the run) | an overlapping or restarted run of the same occurrence is the same work |
 * | Cosmos DB change feed | document `_rid` (or `id`) + `_lsn` | a version of a document; a replay from the lease checkpoint repeats the version, a new write makes a new one |
 * | Blob | blob path + `versionId`, else + `lastModified`, `contentLength`, `contentHash` | one content version; a new upload is new work. Not the ETag: it reaches Node as `{}`. Read apart from the content: prefer `blobDownloadKey` (the download's own version) |
 */

function metaOf(context: InvocationContextLike | undefined): Readonly<Record<string, unknown>> {
  return context?.triggerMetadata ?? {};
}

function at(array: unknown, index: number): unknown {
  return Array.isArray(array) ? (array[index] as unknown) : undefined;
}

/**
 * The key of event `index` of an Event Hubs batch (`cardinality: 'many'`): its CloudEvent identity, from a
 * structured event (the body, also delivered as bytes or text, has `specversion`) or from binary mode
 * (`triggerMetadata.propertiesArray[index]` holds `cloudEvents:*` properties). Give `eventCount` (the batch's
 * length): metadata that does not line up with the events (the host dropped an empty text body) is then
 * refused, never read at a neighbour's index (`batchMisalignment`).
 * @throws InvalidKeyError when the event is not a CloudEvent (pass `keyOf`: a business id in the body), lacks
 *   its `source` or `id`, or is in binary mode in a batch whose metadata does not line up.
 */
export function defaultBatchEventKey(
  consumer: string,
  event: unknown,
  index: number,
  context: InvocationContextLike | undefined,
  eventCount?: number,
): IdempotencyKey {
  const meta = metaOf(context);
  const structured = structuredCloudEvent(jsonObjectOf(event) ?? event, {});
  if (structured) return cloudEventKey(consumer, structured);
  const misaligned = eventCount === undefined ? undefined : batchMisalignment(eventCount, meta);
  if (misaligned) throw new InvalidKeyError(`event ${index} is not a structured CloudEvent and its metadata cannot be trusted: ${misaligned}`);
  // One event (cardinality 'one'): its text body's fields were copied over the metadata, `properties` among them.
  if (!Array.isArray(meta.propertiesArray) && meta.properties !== undefined) assertMetadataNotFromBody(event, ['properties'], 'Event Hubs');
  const identity = binaryCloudEventOf(at(meta.propertiesArray, index)) ?? binaryCloudEventOf(meta.properties);
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

/**
 * The key of a Storage queue message: its `id`, kept across dequeues. `message` is the trigger's input as the
 * handler got it: a JSON body with a top-level `id` (any case) replaced the metadata's (`hostMetadata.ts`).
 * @throws InvalidKeyError without an id, or when the body may have replaced it (pass keyOf, or `dataType: 'binary'`)
 */
export function storageQueueMessageKey(consumer: string, message: unknown, context: InvocationContextLike | undefined): IdempotencyKey {
  assertMetadataNotFromBody(message, ['id'], 'Storage queue');
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

/**
 * One content version of a blob, from its `properties` as they reach Node: the host serialises the SDK's
 * `BlobProperties` with Json.NET, where `ETag` (an `Azure.ETag` struct, no public property) becomes `{}`. So:
 * `versionId` when blob versioning gives one, else `lastModified` (the service's, to the second) with
 * `contentLength` and `contentHash` (the MD5, when the upload set one).
 */
function blobVersionOf(properties: unknown): string[] | undefined {
  const p = (typeof properties === 'object' && properties !== null ? properties : {}) as Record<string, unknown>;
  if (typeof p.versionId === 'string' && p.versionId !== '') return ['versionId', p.versionId];
  const modifiedMs = typeof p.lastModified === 'string' ? Date.parse(p.lastModified) : Number.NaN;
  if (!Number.isFinite(modifiedMs) || typeof p.contentLength !== 'number') return undefined;
  return ['lastModified', new Date(modifiedMs).toISOString(), String(p.contentLength), typeof p.contentHash === 'string' ? p.contentHash : ''];
}

/**
 * The key of a blob trigger run: the blob's path (`blobTrigger`) and its content version (`blobVersionOf`).
 * Two uploads to one path within the same second, of the same length, without an MD5 and without versioning
 * share a key: their digests tell different contents apart (key reused: parked), the same content is one version.
 * `blob` is the trigger's input as the handler got it (a text JSON body may replace `blobTrigger` or `properties`).
 * @throws InvalidKeyError without the path or a version, or when the body may have replaced them
 */
export function blobVersionKey(consumer: string, blob: unknown, context: InvocationContextLike | undefined): IdempotencyKey {
  assertMetadataNotFromBody(blob, ['blobTrigger', 'properties'], 'Blob');
  const meta = metaOf(context);
  const path = meta.blobTrigger;
  const version = blobVersionOf(meta.properties);
  if (typeof path !== 'string' || path === '' || version === undefined) {
    throw new InvalidKeyError(
      'blob trigger metadata without the blob path (blobTrigger) or a version (properties.versionId, or lastModified and contentLength): pass keyOf',
    );
  }
  return keyFromBusinessKey(consumer, JSON.stringify([path, ...version]), (text) => text);
}

/**
 * What {@link blobDownloadKey} reads of a blob download's response (structurally: `@azure/storage-blob`'s
 * `BlobDownloadResponseParsed` has both): the version the bytes in that same response are.
 */
export interface BlobDownloadLike {
  /** The blob version (blob versioning on). */
  readonly versionId?: string;
  /** The content's ETag: changes with every write. */
  readonly etag?: string;
}

/**
 * The key of a blob's content read in **one request**: the path and the version of the response that carried the
 * bytes (`versionId`, else its `etag`). The blob trigger's `properties` come from a request apart from its content's
 * download, with no ETag linking them (it reaches Node as `{}`): an overwrite in between pairs the new content with
 * the old version's key ({@link blobVersionKey}), so the old content is never processed and the new one twice.
 * Download the blob yourself in the handler (`blobClient.download()`), process the bytes of that response, key them
 * with it:
 *
 * ```ts
 * const response = await blobClient.download();
 * const key = blobDownloadKey('invoices', context.triggerMetadata.blobTrigger as string, response);
 * ```
 * @throws InvalidKeyError without the path or a version (neither `versionId` nor `etag`).
 */
export function blobDownloadKey(consumer: string, blobPath: string, download: BlobDownloadLike): IdempotencyKey {
  if (typeof blobPath !== 'string' || blobPath === '') throw new InvalidKeyError("blob download key without the blob path: pass the blob's container/name");
  const version =
    typeof download?.versionId === 'string' && download.versionId !== ''
      ? ['versionId', download.versionId]
      : typeof download?.etag === 'string' && download.etag !== ''
        ? ['etag', download.etag]
        : undefined;
  if (version === undefined) throw new InvalidKeyError('blob download response with neither versionId nor etag: its content version is unknown; pass keyOf');
  return keyFromBusinessKey(consumer, JSON.stringify([blobPath, ...version]), (text) => text);
}
