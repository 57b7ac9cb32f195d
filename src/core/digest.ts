import { createHash } from 'node:crypto';
import { InvalidPayloadError } from './errors';

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units), no whitespace, `undefined` members
 * dropped as JSON does. Two payloads that differ only in property order have one canonical form.
 * @throws InvalidPayloadError for cycles, functions, symbols, bigints and non-finite numbers.
 */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const walk = (v: unknown, path: string): string => {
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return JSON.stringify(v);
      case 'number':
        if (!Number.isFinite(v)) throw new InvalidPayloadError(`payload has a non-finite number at ${path}`);
        return JSON.stringify(v);
      case 'object': {
        if (seen.has(v)) throw new InvalidPayloadError(`payload has a cycle at ${path}`);
        seen.add(v);
        let out: string;
        if (Array.isArray(v)) {
          out = `[${v.map((item, i) => (item === undefined ? 'null' : walk(item, `${path}[${i}]`))).join(',')}]`;
        } else if (v instanceof Date) {
          out = JSON.stringify(v.toISOString());
        } else if (Buffer.isBuffer(v) || v instanceof Uint8Array) {
          out = JSON.stringify({ $bytes: Buffer.from(v).toString('base64') });
        } else {
          const entries = Object.keys(v as object)
            .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${walk((v as Record<string, unknown>)[k], `${path}.${k}`)}`);
          out = `{${entries.join(',')}}`;
        }
        seen.delete(v);
        return out;
      }
      default:
        throw new InvalidPayloadError(`payload has a ${typeof v} at ${path}, which has no canonical form`);
    }
  };
  return walk(value, '$');
}

/** SHA-256 (hex) of the payload's canonical JSON. Bytes are hashed as they are. */
export function payloadDigest(payload: unknown): string {
  const hash = createHash('sha256');
  if (Buffer.isBuffer(payload) || payload instanceof Uint8Array) hash.update(payload);
  else hash.update(canonicalJson(payload), 'utf8');
  return hash.digest('hex');
}
