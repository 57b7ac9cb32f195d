import type { ApiAnswer } from './httpTypes';

/** An answer as the dedup record keeps it (its result): status, headers and the body's bytes in base64. */
export interface StoredAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly bodyBase64: string;
}

/** The header a replayed answer carries (the name Stripe and the IETF draft's examples use). */
export const REPLAYED_HEADER = 'idempotent-replayed';

export function toStoredAnswer(answer: ApiAnswer): StoredAnswer {
  return { status: answer.status, headers: { ...answer.headers }, bodyBase64: answer.body.toString('base64') };
}

/** The stored answer as it was first sent: the same status, headers and body bytes. */
export function fromStoredAnswer(stored: StoredAnswer): ApiAnswer {
  return { status: stored.status, headers: { ...stored.headers }, body: Buffer.from(stored.bodyBase64, 'base64') };
}

/** The stored answer replayed: byte for byte the first one, plus `Idempotent-Replayed: true`. */
export function replayedAnswer(stored: StoredAnswer): ApiAnswer {
  const first = fromStoredAnswer(stored);
  return { ...first, headers: { ...first.headers, [REPLAYED_HEADER]: 'true' } };
}

/** Whole seconds until `untilMs` (at least 1), for a `Retry-After` header. */
export function retryAfterSeconds(untilMs: number, nowMs: number): string {
  return String(Math.max(1, Math.ceil((untilMs - nowMs) / 1000)));
}
