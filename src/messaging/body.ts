import type { z } from 'zod';
import { bodyBytes } from './bodyBytes';
import { ParkReason } from './ParkingStore';

/** Default bound on a message body: Service Bus Standard's 256 KiB message limit. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;

export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: ParkReason; readonly detail: string };

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
