import { createRequire } from 'node:module';
import type { TableClient, TableEntity } from '@azure/data-tables';
import { tracerRegistered } from './idleTracing';
import { transportFor, type HttpClient, type StoreTransport } from './storeTransport';

/** What `TableClient.createEntity` and `updateEntity` answer (the generated operation's flattened response). */
type WriteResponse = Awaited<ReturnType<TableClient['createEntity']>>;

/** What is used here of `@azure/core-rest-pipeline`'s types (not a dependency of this package: `@azure/data-tables`'). */
interface HttpHeaders {
  get(name: string): string | undefined;
  has(name: string): boolean;
  set(name: string, value: string | number): void;
  toJSON(options?: { preserveCase?: boolean }): Record<string, string>;
}
type PipelineRequest = object;
interface PipelineResponse {
  readonly status: number;
  readonly headers: HttpHeaders;
  readonly request: PipelineRequest;
  readonly bodyAsText?: string | null;
  parsedBody?: unknown;
  parsedHeaders?: unknown;
}
interface RestError extends Error {
  code?: string;
  details?: unknown;
}
interface RestErrorOptions {
  readonly code?: string;
  readonly statusCode?: number;
  readonly request?: unknown;
  readonly response?: PipelineResponse;
}

/**
 * The generated service client behind a `TableClient` (`client.table.client`, `@azure/data-tables` 13, not in its
 * typings): a `@azure/core-client` `ServiceClient`, whose `sendRequest` sends a request through the client's pipeline
 * and HTTP client, and the values the generated operations build their requests from.
 */
interface GeneratedService {
  sendRequest(request: PipelineRequest): Promise<PipelineResponse>;
  readonly pipeline: { sendRequest(httpClient: HttpClient, request: PipelineRequest): Promise<PipelineResponse> };
  readonly _httpClient?: HttpClient;
  readonly url: string;
  readonly version: string;
  readonly _endpoint: string;
  readonly _allowInsecureConnection?: boolean;
}

/** What the writes need of `@azure/core-rest-pipeline` (the copy `@azure/data-tables` itself uses). */
interface PipelineKit {
  createPipelineRequest(options: {
    url: string;
    method: 'POST' | 'PATCH';
    headers: HttpHeaders;
    body: string;
    abortSignal: AbortSignal;
    allowInsecureConnection?: boolean;
  }): PipelineRequest;
  createHttpHeaders(raw?: Record<string, string>): HttpHeaders;
  RestError: (new (message: string, options?: RestErrorOptions) => RestError) & { REQUEST_SEND_ERROR: string; PARSE_ERROR: string };
}

/**
 * A marker's insert and conditional merge without the SDK's per-operation span and request (de)serialization while no
 * tracer provider is registered (`tracerRegistered`: without one the span is a no-op, started and ended for nothing).
 * The request `TableClient.createEntity` / `updateEntity(..., 'Merge')` builds through `@azure/core-client`'s operation
 * specs (URL, headers, JSON body: the entity serialized as `@azure/data-tables` does, `PartitionKey`, `RowKey`; an
 * `{ value, type }` property as its value and `<name>@odata.type`) is built here directly and sent through the client's
 * own pipeline (authentication, retries, deadline signal, the caller's policies) and HTTP client (for the SDK's
 * default one, the store's transport in its place: storeTransport.ts): the same request on the wire. The answer is what the public method answers (the response headers it maps: `etag`, `date`, ...); a
 * status the operation does not expect (insert: 201, 204; merge: 204) fails with the `RestError` it fails with (the
 * service's text as message, `statusCode`, `details` with `errorCode` and `odataError`).
 * With `etagOnly` the answer is `{ etag }` alone (the store's writes). Answers `undefined`, and the caller uses the public method, when a tracer is registered, when the client is not a
 * plain `TableClient` of that shape (a method replaced on the instance, no generated client sharing its pipeline, an
 * endpoint with a query), or when the entity holds a value other than a string, a number or an `{ value: string, type }`.
 */
export function insertDirect(client: TableClient, entity: TableEntity, abortSignal: AbortSignal, etagOnly = false): Promise<WriteResponse> | undefined {
  const target = directTarget(client, 'createEntity');
  const properties = target && serializeMarker(entity);
  if (!target || !properties) return undefined;
  const { service, kit, tableUrl } = target;
  const headers = kit.createHttpHeaders({
    'Content-Type': 'application/json;odata=nometadata',
    Accept: 'application/json;odata=minimalmetadata',
    'x-ms-version': service.version,
    DataServiceVersion: '3.0',
    Prefer: 'return-no-content',
  });
  return send(target, kit.createPipelineRequest(requestOptions(service, tableUrl, 'POST', headers, properties, abortSignal)), INSERT_ANSWERS, etagOnly);
}

/** A conditional merge of `entity` on `etag`, as {@link insertDirect}: `undefined` when the public method must be used. */
export function mergeDirect(
  client: TableClient,
  entity: TableEntity,
  etag: string,
  abortSignal: AbortSignal,
  etagOnly = false,
): Promise<WriteResponse> | undefined {
  const target = directTarget(client, 'updateEntity');
  const properties = target && serializeMarker(entity);
  if (!target || !properties) return undefined;
  const { service, kit, tableUrl } = target;
  const url = `${tableUrl}(PartitionKey='${encodeURIComponent(escapeQuotes(entity.partitionKey))}',RowKey='${encodeURIComponent(escapeQuotes(entity.rowKey))}')`;
  const headers = kit.createHttpHeaders({
    'Content-Type': 'application/json',
    'x-ms-version': service.version,
    DataServiceVersion: '3.0',
    Accept: 'application/json',
    'If-Match': etag,
  });
  return send(target, kit.createPipelineRequest(requestOptions(service, url, 'PATCH', headers, properties, abortSignal)), MERGE_ANSWERS, etagOnly);
}

/** The statuses each operation's spec answers with (any other is its error), and the response headers it maps. */
interface Answers {
  readonly ok: ReadonlySet<number>;
  readonly headers: readonly (readonly [name: string, property: string])[];
}
const MERGE_HEADERS = [
  ['x-ms-client-request-id', 'clientRequestId'],
  ['x-ms-request-id', 'requestId'],
  ['x-ms-version', 'version'],
  ['date', 'date'],
  ['etag', 'etag'],
] as const;
const INSERT_ANSWERS: Answers = {
  ok: new Set([201, 204]),
  headers: [...MERGE_HEADERS, ['preference-applied', 'preferenceApplied'], ['content-type', 'contentType']],
};
const MERGE_ANSWERS: Answers = { ok: new Set([204]), headers: MERGE_HEADERS };

interface Target {
  readonly service: GeneratedService;
  readonly kit: PipelineKit;
  /** The table's URL as the generated operations build it (`{endpoint}/{table}`). */
  readonly tableUrl: string;
  /** The store's HTTP client in place of the SDK's default one (storeTransport.ts), when the client was built with it. */
  readonly transport: StoreTransport | undefined;
}

/** Per client: where its writes go, or null when they cannot go direct (see {@link insertDirect}). */
const targets = new WeakMap<TableClient, Target | null>();

function directTarget(client: TableClient, method: 'createEntity' | 'updateEntity'): Target | undefined {
  if (tracerRegistered() || Object.prototype.hasOwnProperty.call(client, method)) return undefined;
  let target = targets.get(client);
  if (target === undefined) {
    target = targetOf(client);
    targets.set(client, target);
  }
  return target ?? undefined;
}

function targetOf(client: TableClient): Target | null {
  const service = (client as unknown as { table?: { client?: Partial<GeneratedService> } }).table?.client;
  const kit = pipelineKit();
  if (!kit || typeof service?.sendRequest !== 'function' || service.pipeline !== client.pipeline) return null;
  if (typeof service.url !== 'string' || typeof service.version !== 'string' || typeof service._endpoint !== 'string') return null;
  try {
    // As core-client's getRequestUrl: `{url}` replaced in the endpoint, the path appended to the URL's pathname.
    const base = new URL(service._endpoint.replace('{url}', service.url));
    if (base.search !== '' || base.hash !== '') return null;
    const path = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
    base.pathname = `${path}${encodeURIComponent(client.tableName)}`;
    return { service: service as GeneratedService, kit, tableUrl: base.toString(), transport: transportFor(client, service, kit) };
  } catch {
    return null;
  }
}

let kitLoaded: PipelineKit | null | undefined;

/** `@azure/core-rest-pipeline` as `@azure/data-tables` resolves it (a dependency of it, not of this package), or null. */
function pipelineKit(): PipelineKit | null {
  if (kitLoaded === undefined) {
    try {
      const fromTables = createRequire(require.resolve('@azure/data-tables'));
      const kit = fromTables('@azure/core-rest-pipeline') as Partial<PipelineKit>;
      const complete = typeof kit.createPipelineRequest === 'function' && typeof kit.createHttpHeaders === 'function' && typeof kit.RestError === 'function';
      kitLoaded = complete ? (kit as PipelineKit) : null;
    } catch {
      kitLoaded = null;
    }
  }
  return kitLoaded;
}

function requestOptions(service: GeneratedService, url: string, method: 'POST' | 'PATCH', headers: HttpHeaders, body: object, abortSignal: AbortSignal) {
  return { url, method, headers, body: JSON.stringify(body), abortSignal, ...(service._allowInsecureConnection ? { allowInsecureConnection: true } : {}) };
}

/**
 * Sends `request` as the generated operation does and answers as it does (see {@link insertDirect}); with `etagOnly`,
 * with the `etag` alone (all the store reads of a write's answer: the other headers are not mapped).
 */
function send({ service, kit, transport }: Target, request: PipelineRequest, answers: Answers, etagOnly: boolean): Promise<WriteResponse> {
  const sent = transport ? service.pipeline.sendRequest(transport, request) : service.sendRequest(request);
  return sent.then((response) => answerOf(kit, response, answers, etagOnly));
}

function answerOf(kit: PipelineKit, response: PipelineResponse, answers: Answers, etagOnly: boolean): WriteResponse {
  const headers: Record<string, unknown> = {};
  if (!answers.ok.has(response.status)) throw restErrorOf(kit, response, headers);
  if (etagOnly) return { etag: response.headers.get('etag') };
  for (const [name, property] of answers.headers) {
    const value = response.headers.get(name);
    if (value !== undefined) headers[property] = property === 'date' ? new Date(value) : value;
  }
  const body = response.parsedBody;
  // A 201 (the service ignored `Prefer`) carries the entity: spread as the Dictionary body it is; otherwise `body`.
  return (body !== null && typeof body === 'object' ? { ...headers, ...body } : { ...headers, body }) as WriteResponse;
}

/** The error core-client's deserialization policy and `ServiceClient.sendOperationRequest` give for such an answer. */
function restErrorOf(kit: PipelineKit, response: PipelineResponse, parsedHeaders: Record<string, unknown>): RestError {
  const error = new kit.RestError(response.bodyAsText as string, { statusCode: response.status, request: response.request, response });
  const raw = response;
  let odata: { odataError: unknown } | undefined;
  if (raw.parsedBody) {
    const parsed = raw.parsedBody as { error?: { code?: string; message?: string }; 'odata.error'?: unknown };
    odata = { odataError: odataErrorOf(parsed['odata.error']) };
    const internal = parsed.error ?? (odata as { code?: string; message?: string });
    error.code = internal.code;
    if (internal.message) error.message = internal.message;
    raw.parsedBody = odata;
  }
  // The exception headers' mapper names `x-ms-error-code` `errorCode` and keeps every other header as it came.
  const { 'x-ms-error-code': errorCode, ...others } = response.headers.toJSON();
  if (errorCode !== undefined) parsedHeaders.errorCode = errorCode;
  Object.assign(parsedHeaders, others);
  raw.parsedHeaders = parsedHeaders;
  error.details = { ...parsedHeaders, ...odata };
  return error;
}

/** `odata.error` as the SDK's `TableServiceErrorOdataError` mapper reads it: `code`, `message: { lang, value }`. */
function odataErrorOf(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  const { code, message } = value as { code?: unknown; message?: unknown };
  const text = message !== null && typeof message === 'object' ? (message as { lang?: unknown; value?: unknown }) : undefined;
  return { code, message: text && { lang: text.lang, value: text.value } };
}

/** The entity as `@azure/data-tables`' `serialize` writes it, or undefined for a value it is not written for here. */
function serializeMarker(entity: TableEntity): Record<string, unknown> | undefined {
  const serialized: Record<string, unknown> = {};
  for (const name of Object.keys(entity)) {
    const value: unknown = entity[name];
    const key = name === 'partitionKey' ? 'PartitionKey' : name === 'rowKey' ? 'RowKey' : name;
    if (typeof value === 'string' || typeof value === 'number') {
      serialized[key] = value;
    } else if (isEdmString(value)) {
      serialized[key] = value.value;
      serialized[`${key}@odata.type`] = `Edm.${value.type}`;
    } else {
      return undefined;
    }
  }
  return serialized;
}

/** An `{ value, type }` property of a type whose value is written as a string. */
function isEdmString(value: unknown): value is { value: string; type: 'Int64' | 'String' | 'Guid' } {
  if (typeof value !== 'object' || value === null) return false;
  const { value: inner, type } = value as { value?: unknown; type?: unknown };
  return typeof inner === 'string' && (type === 'Int64' || type === 'String' || type === 'Guid');
}

/** A key as the SDK puts it in a request's URL (`odata.js`: quotes doubled). */
function escapeQuotes(key: string): string {
  return key.replace(/'/g, "''");
}
