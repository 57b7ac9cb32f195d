import type { z } from 'zod';

/** Why a message cannot be processed however often it is retried: it is parked with this reason. */
export const ParkReason = {
  InvalidJson: 'invalid-json',
  InvalidSchema: 'invalid-schema',
  MissingMessageId: 'missing-message-id',
  MessageIdMismatch: 'message-id-mismatch',
  Oversized: 'oversized',
  KeyReused: 'key-reused',
  /** An update for an entity that never arrived, still missing on the last delivery. */
  OrderNotFound: 'order-not-found',
} as const;
export type ParkReason = (typeof ParkReason)[keyof typeof ParkReason];

/** Default bound on a message body: Service Bus Standard's 256 KiB message limit. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;

/** The raw bytes of a delivered body, as the trigger passes it (parsed JSON, text or bytes). */
export function bodyBytes(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body === undefined) return Buffer.alloc(0);
  return Buffer.from(JSON.stringify(body) ?? '', 'utf8');
}

export type Decoded<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: ParkReason; readonly detail: string };

/**
 * Decodes a delivered body into `T`: size bound, then JSON (the trigger hands over JSON bodies
 * already parsed, others as text or bytes), then the schema. Never throws; failures say why.
 */
export function decodeBody<T>(body: unknown, schema: z.ZodType<T>, maxBytes: number = DEFAULT_MAX_BODY_BYTES): Decoded<T> {
  const size = bodyBytes(body).length;
  if (size > maxBytes) return { ok: false, reason: ParkReason.Oversized, detail: `body is ${size} bytes, more than ${maxBytes}` };
  let value: unknown = body;
  if (typeof body === 'string' || Buffer.isBuffer(body) || body instanceof Uint8Array) {
    const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { ok: false, reason: ParkReason.InvalidJson, detail: `body is not JSON: ${(error as Error).message}` };
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`);
    return { ok: false, reason: ParkReason.InvalidSchema, detail: problems.join('; ').slice(0, 1000) };
  }
  return { ok: true, value: parsed.data };
}
