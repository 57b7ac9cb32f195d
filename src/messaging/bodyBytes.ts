/** The raw bytes of a delivered body, as the trigger passes it (parsed JSON, text or bytes). */
export function bodyBytes(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body === undefined) return Buffer.alloc(0);
  return Buffer.from(JSON.stringify(body) ?? '', 'utf8');
}
