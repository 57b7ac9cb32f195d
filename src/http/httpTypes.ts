/**
 * The HTTP request and answer as the runtime-free endpoints see them. `src/app/http.ts` adapts the
 * Functions `HttpRequest` / `HttpResponseInit` to these; tests build them by hand or go over real HTTP
 * through the local host (`tools/local/httpHost.ts`).
 */

/** What an endpoint reads of a request. Header names are case-insensitive (`get` lower-cases). */
export interface ApiRequest {
  readonly method: string;
  /** The request URL (absolute, as the Functions host gives it). */
  readonly url: string;
  readonly headers: { get(name: string): string | null };
  /** The raw body, byte for byte (the webhook signs these bytes). */
  readonly body: Buffer;
}

/** An answer: status, headers (lower-case names) and the body bytes. */
export interface ApiAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** A JSON answer (UTF-8, `application/json` unless `contentType` says otherwise). */
export function jsonAnswer(status: number, value: unknown, headers: Record<string, string> = {}, contentType = 'application/json'): ApiAnswer {
  return { status, headers: { 'content-type': contentType, ...headers }, body: Buffer.from(JSON.stringify(value), 'utf8') };
}

/**
 * An RFC 9457 problem answer (`application/problem+json`), as the Idempotency-Key draft suggests for
 * its 400, 409 and 422. `type` is a relative URI naming the problem; `detail` never holds a payload.
 */
export function problemAnswer(status: number, type: string, title: string, detail: string, headers: Record<string, string> = {}): ApiAnswer {
  return jsonAnswer(status, { type: `/problems/${type}`, title, status, detail }, headers, 'application/problem+json');
}
