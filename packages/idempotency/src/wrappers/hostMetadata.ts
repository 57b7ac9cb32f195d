import { InvalidKeyError } from '../protocol/errors';

/**
 * What the Functions host does to a trigger's input and metadata before `@azure/functions` hands them to a
 * Node handler, where it decides what a key may read (the host's source, read for the trigger keys):
 *
 * 1. **A text body's top-level fields are copied over the trigger metadata.** `WorkerFunctionInvoker.TransformInput`
 *    calls `Utility.ApplyBindingData` (Azure/azure-functions-host, src/WebJobs.Script/Utility.cs): when the trigger
 *    input is a string that looks like a JSON object (`{`...`}` once trimmed), Json.NET parses it and every
 *    top-level property whose value is not null and not an array is written into the binding data, a dictionary
 *    that ignores case (`Binder.BindingData`, Azure/azure-webjobs-sdk, `StringComparer.OrdinalIgnoreCase`). So a
 *    body `{"id": "cust-42"}` replaces a queue message's `Id`, `{"messageId": ...}` a Service Bus `MessageId`.
 *    Bytes (`dataType: 'binary'`) and batches (`cardinality: 'many'`: an array) are never copied.
 * 2. **A batch's text bodies drop their empty entries, its metadata does not.** `ToRpcStringArray`
 *    (src/WebJobs.Script.Grpc/MessageExtensions/GrpcMessageConversionExtensions.cs) skips null and empty strings
 *    unless the worker declares `IncludeEmptyEntriesInMessagePayload` (the Node worker does not), while the
 *    `PropertiesArray`, `SystemPropertiesArray`, `SequenceNumberArray`... go whole (JSON or numbers): the events
 *    after an empty one sit one place before their metadata. Bytes (`ToRpcByteArray`) keep empty entries.
 * 3. **Metadata text that is JSON arrives parsed**: `@azure/functions` (`fromRpcTypedData`) runs `JSON.parse` on
 *    every string it can, so a `MessageId` "42" reaches the handler as the number 42, and "4.2e1" too.
 */

/** The names (lower case) of the trigger metadata a body may have replaced; `undefined` when it cannot be known. */
export type CopiedFields = { readonly known: true; readonly names: ReadonlySet<string> } | { readonly known: false; readonly why: string };

const NONE: CopiedFields = { known: true, names: new Set() };

function isBytes(value: unknown): boolean {
  return value instanceof Uint8Array || value instanceof ArrayBuffer || Buffer.isBuffer(value);
}

/**
 * Which trigger metadata fields the host may have overwritten with this body's (see 1 above), judged from the
 * body as the handler received it: bytes, numbers and arrays -> none; an object (the library parsed the JSON
 * text) -> its top-level names that are not null and not arrays, in lower case (the host ignores case); a string
 * that looks like a JSON object yet reached the handler unparsed -> unknown (Json.NET reads comments, single quotes
 * and bare names that `JSON.parse` refuses); no body given -> unknown.
 */
export function fieldsCopiedFromBody(body: unknown): CopiedFields {
  if (body === undefined) return { known: false, why: 'the message body was not given to the key function' };
  if (isBytes(body) || body === null || typeof body !== 'object') {
    if (typeof body === 'string' && /^\{[\s\S]*\}$/.test(body.trim())) {
      return { known: false, why: 'the body is text that looks like a JSON object the library could not parse, which the host may have read' };
    }
    return NONE;
  }
  if (Array.isArray(body)) return NONE;
  const names = Object.entries(body as Record<string, unknown>)
    .filter(([, value]) => value !== null && value !== undefined && !Array.isArray(value))
    .map(([name]) => name.toLowerCase());
  return { known: true, names: new Set(names) };
}

/**
 * Refuses a key read from trigger metadata fields `names` that the body may have replaced: the Functions host
 * copies a JSON text body's top-level fields over the trigger metadata (case-insensitive) before the handler sees
 * it (see 1 above). The built-in key helpers apply it; apply it in a `keyOf` of yours that reads
 * `context.triggerMetadata`, with the body as the handler received it. `trigger` names the key in the error.
 *
 * ```ts
 * assertMetadataNotFromBody(message, ['messageId'], 'Service Bus MessageId');
 * ```
 * @throws InvalidKeyError naming the field, the cause and the remedies (`keyOf`, or `dataType: 'binary'`).
 */
export function assertMetadataNotFromBody(body: unknown, names: readonly string[], trigger: string): void {
  const copied = fieldsCopiedFromBody(body);
  const shadowed = copied.known ? names.filter((name) => copied.names.has(name.toLowerCase())) : names;
  if (shadowed.length === 0) return;
  const why = copied.known
    ? `the body has a top-level field ${shadowed.map((name) => JSON.stringify(name)).join(', ')} (in any case)`
    : `${copied.why}, so its fields may have replaced ${shadowed.map((name) => JSON.stringify(name)).join(', ')}`;
  throw new InvalidKeyError(
    `${trigger} key refused: ${why}, and the Functions host copies a JSON body's top-level fields over the trigger metadata ` +
      '(Utility.ApplyBindingData, case-insensitive) before the handler sees it, so the metadata may name the body, not the message. ' +
      "Pass keyOf (a business id in the body), or bind the trigger with dataType: 'binary' (the host copies only text bodies)",
  );
}

/** Metadata arrays a batch carries one entry per event in, whole (never dropping an entry: see 2 above). */
function longestMetadataArray(meta: Readonly<Record<string, unknown>>): { name: string; length: number } | undefined {
  let longest: { name: string; length: number } | undefined;
  for (const [name, value] of Object.entries(meta)) {
    if (name.endsWith('Array') && Array.isArray(value) && (longest === undefined || value.length > longest.length)) longest = { name, length: value.length };
  }
  return longest;
}

/**
 * Why a batch's metadata does not line up with its `eventCount` events, or `undefined` when it does: some
 * `*Array` entry has more entries than the batch has events (the host dropped empty text bodies: see 2 above),
 * so the metadata at index i may be another event's. String arrays may be shorter (null entries dropped) and
 * are never read by position here.
 */
export function batchMisalignment(eventCount: number, meta: Readonly<Record<string, unknown>>): string | undefined {
  const longest = longestMetadataArray(meta);
  if (longest === undefined || longest.length <= eventCount) return undefined;
  return (
    `the batch holds ${eventCount} events but its trigger metadata ${longest.name} has ${longest.length} entries: the Functions host ` +
    "drops an empty text body from a dataType 'string' batch and keeps its metadata (ToRpcStringArray), so an event's metadata " +
    "may be its neighbour's. Bind the trigger with dataType: 'binary' (empty bodies are kept) or pass keyOf (a business id in the body)"
  );
}

/**
 * A JSON object delivered as bytes or text (`dataType: 'binary'`, or text the handler got unparsed), parsed; the
 * body itself when it is an object already; otherwise `undefined`. `JSON.parse` does not recurse on the stack
 * (V8), so a deeply nested body cannot overflow it here.
 */
export function jsonObjectOf(body: unknown): Record<string, unknown> | undefined {
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && !isBytes(body)) return body as Record<string, unknown>;
  let text: string;
  if (typeof body === 'string') text = body;
  else if (body instanceof ArrayBuffer) text = Buffer.from(body).toString('utf8');
  else if (body instanceof Uint8Array) text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  else return undefined;
  text = text.replace(/^\uFEFF/, '').trim();
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
