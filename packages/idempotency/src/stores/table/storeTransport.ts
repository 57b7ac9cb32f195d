import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

/** What is used here of `@azure/core-rest-pipeline`'s request, headers and response (its types: not a dependency of this package). */
interface Headers {
  get(name: string): string | undefined;
  has(name: string): boolean;
  set(name: string, value: string | number): void;
  toJSON(options?: { preserveCase?: boolean }): Record<string, string>;
}
export interface TransportRequest {
  url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly body?: unknown;
  readonly abortSignal?: AbortSignal;
  readonly timeout: number;
  readonly allowInsecureConnection?: boolean;
  readonly agent?: unknown;
  readonly tlsSettings?: unknown;
  readonly disableKeepAlive?: boolean;
  readonly requestOverrides?: unknown;
  readonly onUploadProgress?: unknown;
  readonly onDownloadProgress?: unknown;
  readonly streamResponseStatusCodes?: ReadonlySet<number>;
}
export interface TransportResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly request: TransportRequest;
  bodyAsText?: string;
}
export interface HttpClient {
  sendRequest(request: TransportRequest): Promise<TransportResponse>;
}
/** What the transport needs of `@azure/core-rest-pipeline` (the copy `@azure/data-tables` uses). */
export interface TransportKit {
  createHttpHeaders(): Headers;
  RestError: (new (message: string, options?: { code?: string; request?: unknown }) => Error) & { REQUEST_SEND_ERROR: string; PARSE_ERROR: string };
}
/** How `@typespec/ts-http-runtime`'s Node HTTP client tells a timeout: its logger's `info`, the URL through its `Sanitizer`. */
export interface TimeoutLog {
  info(message: string): void;
  sanitizeUrl(url: string): string;
}

/** As the SDK's (`@typespec/ts-http-runtime` `AbortError`): an `Error` named `AbortError`. */
class AbortError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AbortError';
  }
}

/**
 * The SDK's default HTTP client (`@azure/core-rest-pipeline` 1.24 `createDefaultHttpClient`: `@typespec/ts-http-runtime`'s
 * `NodeHttpClient` behind a layer that turns a signal-like into an `AbortSignal`, what a `TableClient` built without an
 * `httpClient` option sends through), for the store's marker writes, without what those requests never use: the same
 * request on the wire (URL, method, the pipeline's headers, `Content-Length` set when absent, the string body), a
 * keep-alive agent per protocol as the SDK's, the same answer (status, the headers' first values, the body as text,
 * gunzipped or inflated when asked for) and the same failures (`RestError` with the socket error's code or
 * `REQUEST_SEND_ERROR`; `AbortError` when the request's signal aborts before the answer's headers, the body's failure
 * after them; the per-try `timeout` up to the answer's headers, logged as the SDK logs it). Without an
 * `AbortController` and two async layers of its own per request; its listener on the request's signal is removed when
 * the answer has been read or has failed.
 * A request with anything else (a body other than a string, a signal-like that is not an `AbortSignal`, progress
 * callbacks, a streamed answer, an agent or TLS settings of its own, proxy agents included, keep-alive disabled,
 * overrides) goes to `fallback`, the SDK's own client.
 */
export class StoreTransport implements HttpClient {
  private httpAgent: http.Agent | undefined;
  private httpsAgent: https.Agent | undefined;

  constructor(
    private readonly kit: TransportKit,
    private readonly fallback: HttpClient,
    private readonly timeoutLog: TimeoutLog,
  ) {}

  sendRequest(request: TransportRequest): Promise<TransportResponse> {
    if (!plain(request)) return this.fallback.sendRequest(request);
    const signal = request.abortSignal;
    if (signal?.aborted) return Promise.reject(new AbortError('The operation was aborted. Request has already been canceled.'));
    let url: URL;
    try {
      url = new URL(request.url);
    } catch (error) {
      // An invalid URL: the TypeError `new URL` throws, as the SDK's client fails with it.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return Promise.reject(error);
    }
    const insecure = url.protocol !== 'https:';
    if (insecure && !request.allowInsecureConnection)
      return Promise.reject(new Error(`Cannot connect to ${request.url} while allowInsecureConnection is false.`));
    const body = request.body as string | undefined;
    if (body && !request.headers.has('Content-Length')) request.headers.set('Content-Length', Buffer.byteLength(body));
    const acceptEncoding = request.headers.get('Accept-Encoding');
    const decompress = acceptEncoding !== undefined && (acceptEncoding.includes('gzip') || acceptEncoding.includes('deflate'));
    const options: http.RequestOptions = {
      agent: insecure ? (this.httpAgent ??= new http.Agent({ keepAlive: true })) : (this.httpsAgent ??= new https.Agent({ keepAlive: true })),
      hostname: url.hostname,
      path: `${url.pathname}${url.search}`,
      port: url.port,
      method: request.method,
      headers: request.headers.toJSON({ preserveCase: true }),
    };
    return new Promise<TransportResponse>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      // As the SDK's client: an abort or a socket error fails the request until the answer's headers came; later, the
      // request is destroyed and the answer's stream fails (or ends) as it does.
      let responding = false;
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: Error) => {
        done();
        if (settled) return;
        settled = true;
        reject(error);
      };
      const req = (insecure ? http : https).request(options, (res) => {
        responding = true;
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        const headers = this.kit.createHttpHeaders();
        for (const name of Object.keys(res.headers)) {
          const value = res.headers[name];
          if (Array.isArray(value)) {
            if (value.length > 0) headers.set(name, value[0]);
          } else if (value) headers.set(name, value);
        }
        const response: TransportResponse = { status: res.statusCode ?? 0, headers, request };
        if (request.method === 'HEAD') {
          res.resume();
          done();
          settled = true;
          return resolve(response);
        }
        const stream: Readable = decompress ? decoded(res, headers) : res;
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer | string) => void chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)));
        stream.on('end', () => {
          done();
          response.bodyAsText = Buffer.concat(chunks).toString('utf8');
          settled = true;
          resolve(response);
        });
        stream.on('error', (error: Error) =>
          fail(
            error?.name === 'AbortError'
              ? error
              : new this.kit.RestError(`Error reading response as text: ${error.message}`, { code: this.kit.RestError.PARSE_ERROR }),
          ),
        );
      });
      const onAbort = () => {
        const abortError = new AbortError('The operation was aborted. Rejecting from abort signal callback while making request.');
        req.destroy(abortError);
        if (!responding) fail(abortError);
      };
      req.once('error', (error: NodeJS.ErrnoException) => {
        if (!responding) fail(new this.kit.RestError(error.message, { code: error.code ?? this.kit.RestError.REQUEST_SEND_ERROR, request }));
      });
      signal?.addEventListener('abort', onAbort);
      if (request.timeout > 0) {
        timer = setTimeout(() => {
          this.timeoutLog.info(`request to '${this.timeoutLog.sanitizeUrl(request.url)}' timed out. canceling...`);
          onAbort();
        }, request.timeout);
      }
      if (body) req.end(body);
      else req.end();
    });
  }
}

/** A request the transport sends itself (see {@link StoreTransport}). */
function plain(request: TransportRequest): boolean {
  return (
    (request.body === undefined || typeof request.body === 'string') &&
    (request.abortSignal === undefined || request.abortSignal instanceof AbortSignal) &&
    request.agent === undefined &&
    request.tlsSettings === undefined &&
    !request.disableKeepAlive &&
    request.requestOverrides === undefined &&
    request.onUploadProgress === undefined &&
    request.onDownloadProgress === undefined &&
    (request.streamResponseStatusCodes === undefined || request.streamResponseStatusCodes.size === 0)
  );
}

function decoded(res: http.IncomingMessage, headers: Headers): Readable {
  const encoding = headers.get('Content-Encoding');
  if (encoding === 'gzip') return res.pipe(zlib.createGunzip());
  if (encoding === 'deflate') return res.pipe(zlib.createInflate());
  return res;
}

/** One transport per HTTP client it stands in for (the SDK's default one is shared by every client, with its agent). */
const transports = new WeakMap<HttpClient, StoreTransport>();

/**
 * The store's transport for `client`'s direct writes, or undefined: only in place of the SDK's own Node HTTP client (a
 * client built without an `httpClient` option), whose behaviour it keeps (storeTransport.ts).
 */
export function transportFor(client: object, service: { readonly _httpClient?: HttpClient }, kit: TransportKit): StoreTransport | undefined {
  const own = service._httpClient;
  const options = (client as unknown as { clientOptions?: { httpClient?: unknown } }).clientOptions;
  const log = timeoutLog();
  if (!own || typeof own.sendRequest !== 'function' || options === undefined || options.httpClient !== undefined || !log) return undefined;
  let transport = transports.get(own);
  if (!transport) transports.set(own, (transport = new StoreTransport(kit, own, log)));
  return transport;
}

let logLoaded: TimeoutLog | null | undefined;

/** The logger and URL sanitizer `@typespec/ts-http-runtime`'s Node HTTP client tells a timeout with, as `@azure/data-tables` resolves it. */
function timeoutLog(): TimeoutLog | null {
  if (logLoaded === undefined) {
    try {
      const fromPipeline = createRequire(createRequire(require.resolve('@azure/data-tables')).resolve('@azure/core-rest-pipeline'));
      const runtime = fromPipeline('@typespec/ts-http-runtime') as { createClientLogger(name: string): { info(message: string): void } };
      const { Sanitizer } = fromPipeline('@typespec/ts-http-runtime/internal/util') as { Sanitizer: new () => { sanitizeUrl(url: string): string } };
      const logger = runtime.createClientLogger('ts-http-runtime');
      const sanitizer = new Sanitizer();
      logLoaded = { info: (message) => logger.info(message), sanitizeUrl: (url) => sanitizer.sanitizeUrl(url) };
    } catch {
      logLoaded = null;
    }
  }
  return logLoaded;
}
