import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The payment provider's webhook signature (the scheme Stripe uses): header
 * `Provider-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the HMAC keyed by the shared secret over
 * `<t>.` followed by the raw body bytes. Several `v1=` entries may be present (during a secret rotation);
 * one matching is enough. The timestamp is signed, so a captured request cannot be replayed later than
 * the tolerance window.
 */
export const SIGNATURE_HEADER = 'provider-signature';

/**
 * Why a signature was refused: `missing`/`malformed` (400), `stale` (400, outside the window), `mismatch` (403: the
 * credentials were presented and are not good enough, RFC 9110 §15.5.4; a 401 would need a `WWW-Authenticate`
 * challenge, and no HTTP authentication scheme exists for a provider's signature).
 */
export type SignatureFailure = 'missing' | 'malformed' | 'stale' | 'mismatch';

export type SignatureCheck =
  | { readonly ok: true; readonly timestampSec: number }
  | { readonly ok: false; readonly reason: SignatureFailure; readonly status: 400 | 403; readonly skewSec?: number };

/** The hex HMAC-SHA256 of `<timestampSec>.<rawBody>` under `secret`. */
export function webhookSignature(secret: string, timestampSec: number, rawBody: Buffer): string {
  return createHmac('sha256', secret).update(`${timestampSec}.`, 'utf8').update(rawBody).digest('hex');
}

/** The header value a sender puts on a webhook. @example signatureHeader(secret, 1767225600, body) // 't=1767225600,v1=5f0c...' */
export function signatureHeader(secret: string, timestampSec: number, rawBody: Buffer): string {
  return `t=${timestampSec},v1=${webhookSignature(secret, timestampSec, rawBody)}`;
}

/**
 * Checks a webhook's signature header against its raw body: well-formed (else 400), one `v1` matching
 * in constant time under one of `secrets` (else 403), then the timestamp within `toleranceSec` of `nowMs`
 * either way (else 400, `stale`). A forged request is told 403 whatever its timestamp: nothing about the
 * window is learnt without a secret. Several secrets: during a rotation, the current and the previous one.
 */
export function verifyWebhookSignature(
  header: string | null,
  rawBody: Buffer,
  secrets: string | readonly string[],
  nowMs: number,
  toleranceSec: number,
): SignatureCheck {
  if (!header || header.trim() === '') return { ok: false, reason: 'missing', status: 400 };
  let timestampSec: number | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const [name, value, ...extra] = part.trim().split('=');
    if (value === undefined || extra.length > 0) return { ok: false, reason: 'malformed', status: 400 };
    if (name === 't') {
      if (!/^\d{1,12}$/.test(value) || timestampSec !== undefined) return { ok: false, reason: 'malformed', status: 400 };
      timestampSec = Number(value);
    } else if (name === 'v1') {
      if (!/^[0-9a-f]{64}$/.test(value)) return { ok: false, reason: 'malformed', status: 400 };
      signatures.push(Buffer.from(value, 'hex'));
    }
  }
  if (timestampSec === undefined || signatures.length === 0) return { ok: false, reason: 'malformed', status: 400 };
  const expected = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => Buffer.from(webhookSignature(secret, timestampSec, rawBody), 'hex'));
  if (!signatures.some((s) => expected.some((e) => timingSafeEqual(s, e)))) return { ok: false, reason: 'mismatch', status: 403 };
  const skewSec = Math.round(nowMs / 1000 - timestampSec);
  if (Math.abs(skewSec) > toleranceSec) return { ok: false, reason: 'stale', status: 400, skewSec };
  return { ok: true, timestampSec };
}
