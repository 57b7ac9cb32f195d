import { jsonText } from './jsonText';

/**
 * The raw bytes of a delivered body, as the trigger passes it (parsed JSON, text or bytes). A parsed body is
 * written back as JSON without recursion its shape could overflow (`jsonText`): a body of thousands of nested
 * arrays is measured and parked like any other.
 */
export function bodyBytes(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body === undefined) return Buffer.alloc(0);
  return Buffer.from(jsonText(body), 'utf8');
}
