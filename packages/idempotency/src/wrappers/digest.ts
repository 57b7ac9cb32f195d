import { InvalidPayloadError } from '../protocol/errors';
import { sha256Hex } from '../protocol/sha256';

/** Deepest nesting of arrays, objects, Maps and Sets accepted in a payload. */
export const MAX_PAYLOAD_DEPTH = 1000;
/** Member name that marks a tagged (non-JSON) value in the canonical text; see {@link canonicalJson}. */
const TAG = '$canonical';
/** Plain-object member names that could be read as the tag; one more `$` is put in front of them. */
const TAG_LIKE = /^\$+canonical$/;

/** Where in the payload a value sits, built only when an error names it. */
interface PathStep {
  readonly parent: PathStep | undefined;
  readonly step: string;
}

/**
 * The payload's canonical text: JSON, equal for equal data, different for different data.
 *
 * Plain JSON data keeps its JSON form: object members sorted (by UTF-16 code units), no
 * whitespace. Other values are tagged objects whose first member is `"$canonical"` (a plain
 * object's member named `$canonical`, `$$canonical`... gets one more `$`, so a plain object never
 * reads as a tagged one):
 *
 * | value | canonical text |
 * |---|---|
 * | `undefined` object member | left out (the same as absent, as in JSON) |
 * | `undefined` array element | `{"$canonical":"undefined"}` (not `null`) |
 * | `-0` | `0` (`-0 === 0`) |
 * | `Date` | `{"$canonical":"Date","iso":"2026-01-01T00:00:00.000Z"}` |
 * | `Buffer`, `Uint8Array` | `{"$canonical":"bytes","base64":"..."}` (one kind: bytes are bytes) |
 * | other typed arrays, `ArrayBuffer`, `DataView` | `{"$canonical":"<type name>","base64":"<their bytes>"}` |
 * | `Map` | `{"$canonical":"Map","entries":[[k,v],...]}`, entries sorted by canonical text |
 * | `Set` | `{"$canonical":"Set","values":[...]}`, sorted by canonical text |
 *
 * @throws InvalidPayloadError, naming the path, for what has no canonical form: `undefined` at the
 *   top, holes in sparse arrays, `NaN` and `±Infinity`, bigints, functions, symbols (also as
 *   property keys), invalid Dates, cycles, nesting deeper than {@link MAX_PAYLOAD_DEPTH}, objects
 *   of other classes (`RegExp`, `Error`, class instances, boxed primitives: pass plain data), arrays
 *   with non-index properties, and anything that throws while it is read (getters, proxies).
 *   No other error escapes.
 * @example canonicalJson({ b: 1, a: [new Map([[1, 'x']])] }) // '{"a":[{"$canonical":"Map","entries":[[1,"x"]]}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const fail = (what: string, at: PathStep | undefined, value?: string): never => {
    throw new InvalidPayloadError(`payload has ${what} at ${pathText(at)}${value ? ` (${value})` : ''}, which has no canonical form`);
  };
  const walk = (v: unknown, at: PathStep | undefined, depth: number): string => {
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return JSON.stringify(v);
      case 'number':
        if (!Number.isFinite(v)) fail('a non-finite number', at, String(v));
        return JSON.stringify(v); // -0 is written 0
      case 'undefined':
        return fail('undefined', at);
      case 'object':
        break;
      default:
        return fail(`a ${typeof v}`, at);
    }
    const object = v;
    if (depth >= MAX_PAYLOAD_DEPTH) throw new InvalidPayloadError(`payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels (at ${pathText(at)})`);
    if (seen.has(object)) throw new InvalidPayloadError(`payload has a cycle at ${pathText(at)}`);
    seen.add(object);
    const child = (item: unknown, step: string): string => walk(item, { parent: at, step }, depth + 1);
    let out: string;
    if (Array.isArray(object)) {
      const items: string[] = [];
      for (let i = 0; i < object.length; i++) {
        if (!(i in object)) fail('a hole (sparse array)', { parent: at, step: `[${i}]` });
        const item: unknown = object[i];
        items.push(item === undefined ? tagged('undefined') : child(item, `[${i}]`));
      }
      const keys = Object.keys(object); // every index is there (no holes): more keys are other members
      if (keys.length > object.length) {
        const extra = keys.find((k) => !(String(Number(k)) === k && Number(k) < object.length));
        fail(`an array with the non-index property ${JSON.stringify(extra)}`, at);
      }
      out = `[${items.join(',')}]`;
    } else if (object instanceof Date) {
      const time = object.getTime();
      if (Number.isNaN(time)) fail('an invalid Date', at);
      out = tagged('Date', `"iso":${JSON.stringify(object.toISOString())}`);
    } else if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer || isSharedArrayBuffer(object)) {
      out = bytesOf(object as ArrayBufferView | ArrayBufferLike);
    } else if (object instanceof Map) {
      const entries = [...object].map(([k, item], i) => `[${child(k, `<Map key ${i}>`)},${child(item, `<Map value ${i}>`)}]`);
      out = tagged('Map', `"entries":[${entries.sort(compareCodeUnits).join(',')}]`);
    } else if (object instanceof Set) {
      const items = [...object].map((item, i) => child(item, `<Set value ${i}>`));
      out = tagged('Set', `"values":[${items.sort(compareCodeUnits).join(',')}]`);
    } else {
      if (!isPlainObject(object)) fail(`an object of class ${className(object)}`, at);
      const symbol = Object.getOwnPropertySymbols(object).find((s) => Object.prototype.propertyIsEnumerable.call(object, s));
      if (symbol) fail(`a symbol-keyed property ${String(symbol)}`, at);
      const record = object as Record<string, unknown>;
      const members: string[] = [];
      for (const k of Object.keys(record).sort(compareCodeUnits)) {
        const item = record[k];
        if (item === undefined) continue;
        const name = TAG_LIKE.test(k) ? `$${k}` : k;
        members.push(`${JSON.stringify(name)}:${child(item, `.${k}`)}`);
      }
      out = `{${members.join(',')}}`;
    }
    seen.delete(object);
    return out;
  };
  try {
    return walk(value, undefined, 0);
  } catch (error) {
    if (error instanceof InvalidPayloadError) throw error;
    // A getter or a proxy threw while the payload was read (or the stack ran out): say so, never raw.
    throw new InvalidPayloadError(`payload cannot be read: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** SHA-256 (hex) of the payload's canonical text ({@link canonicalJson}). @throws InvalidPayloadError */
export function payloadDigest(payload: unknown): string {
  return sha256Hex(canonicalJson(payload));
}

function tagged(type: string, members?: string): string {
  return `{${JSON.stringify(TAG)}:${JSON.stringify(type)}${members ? `,${members}` : ''}}`;
}

function bytesOf(object: ArrayBufferView | ArrayBufferLike): string {
  const view = ArrayBuffer.isView(object) ? Buffer.from(object.buffer, object.byteOffset, object.byteLength) : Buffer.from(object);
  const type = object instanceof Uint8Array ? 'bytes' : className(object);
  return tagged(type, `"base64":${JSON.stringify(view.toString('base64'))}`);
}

function isSharedArrayBuffer(object: object): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && object instanceof SharedArrayBuffer;
}

/** An object literal or `Object.create(null)` (also from another realm): nothing but its members. */
function isPlainObject(object: object): boolean {
  if (Object.prototype.toString.call(object) !== '[object Object]') return false;
  const proto = Object.getPrototypeOf(object) as object | null;
  return proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null;
}

function className(object: object): string {
  const name = (Object.getPrototypeOf(object) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === 'string' && name !== '' ? name : Object.prototype.toString.call(object).slice(8, -1);
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `$.a[0].b`, shortened in the middle when very deep. */
function pathText(at: PathStep | undefined): string {
  const steps: string[] = [];
  for (let p = at; p; p = p.parent) steps.push(p.step);
  steps.reverse();
  const shown = steps.length > 40 ? [...steps.slice(0, 20), `...(${steps.length - 40} more)...`, ...steps.slice(-20)] : steps;
  return `$${shown.join('')}`;
}
