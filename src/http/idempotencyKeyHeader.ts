/** The `Idempotency-Key` request header: its name, limits and parsing. */

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Longest key accepted, in characters (Stripe's limit; the IETF draft sets none). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** What parsing a header found: the key, or why there is none usable. */
export type ParsedIdempotencyKey =
  { readonly ok: true; readonly key: string } | { readonly ok: false; readonly problem: 'missing' | 'malformed' | 'duplicate'; readonly detail: string };

/** Printable ASCII (VCHAR and the space), the characters a header value carries unambiguously. */
const PRINTABLE = /^[\x20-\x7E]+$/;

/**
 * Parses an `Idempotency-Key` header value:
 * - absent or empty (after the optional white space HTTP allows around a value): `missing`;
 * - the IETF draft's form, a Structured Field string (`"8e03978e-..."`), is unwrapped: its content is the
 *   key (`\"` and `\\` unescaped); Stripe's form, a bare token, is the key as it is. So `"abc"` and `abc`
 *   name the same key;
 * - the key must be 1-255 printable ASCII characters, else `malformed`.
 * The field is a single Item (the draft), so a list is `duplicate`: two `Idempotency-Key` field lines reach
 * the app joined by a comma (RFC 9110 §5.3; the host and Node join them), and a comma outside a quoted
 * string can only mean that. A bare key therefore never contains a comma (quote it: `"a,b"` is one key).
 */
export function parseIdempotencyKey(value: string | null | undefined): ParsedIdempotencyKey {
  const raw = (value ?? '').trim();
  if (raw === '') return { ok: false, problem: 'missing', detail: 'the Idempotency-Key header is required for POST /api/payments' };
  if (outsideQuotes(raw).includes(',')) {
    return { ok: false, problem: 'duplicate', detail: 'the Idempotency-Key field must appear once, with one key (a key with a comma must be a quoted string)' };
  }
  let key = raw;
  if (raw.startsWith('"')) {
    const sf = /^"((?:[^"\\]|\\["\\])*)"$/.exec(raw);
    if (!sf) return { ok: false, problem: 'malformed', detail: 'the Idempotency-Key header is not a well-formed quoted string' };
    key = sf[1].replace(/\\(["\\])/g, '$1');
  }
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    return { ok: false, problem: 'malformed', detail: `the Idempotency-Key must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters, got ${key.length}` };
  }
  if (!PRINTABLE.test(key)) return { ok: false, problem: 'malformed', detail: 'the Idempotency-Key must be printable ASCII (0x20-0x7E)' };
  return { ok: true, key };
}

/** `value` with the content of its quoted strings (and their escapes) removed. */
function outsideQuotes(value: string): string {
  return value.replace(/"(?:[^"\\]|\\.)*"?/g, '""');
}
