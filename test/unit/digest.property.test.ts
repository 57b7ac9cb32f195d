import { inspect } from 'node:util';
import { canonicalJson, InvalidPayloadError, MAX_PAYLOAD_DEPTH, payloadDigest } from 'azure-functions-idempotency/internal';
import { genValue, Random } from '../support/generators';

/**
 * Property tests of the digest over seeded, generated inputs (see test/support/generators.ts).
 * The reference model below is written from the rules in docs/DESIGN.md ("Payload digest"), not
 * from the implementation: `encodable` says which inputs get a digest, `sameData` which inputs are
 * the same data. The digest must agree with both: no raw error, no collision, no false difference.
 * Reproduce a failure with PROPERTY_SEED=<seed>.
 */

const SEEDS = process.env.PROPERTY_SEED ? [Number(process.env.PROPERTY_SEED)] : [1, 2, 3, 4, 5];
const VALUES_PER_SEED = 1500;

// ---- reference model ----------------------------------------------------------------------------

const isBytes = (v: object): boolean => v instanceof Uint8Array; // Buffer included
const isBinary = (v: object): boolean => ArrayBuffer.isView(v) || v instanceof ArrayBuffer;
const binaryType = (v: object): string => (isBytes(v) ? 'bytes' : v.constructor.name);
const binaryBytes = (v: object): Buffer => (ArrayBuffer.isView(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : Buffer.from(v as ArrayBuffer));
const isPlain = (v: object): boolean => {
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && Object.prototype.toString.call(v) === '[object Object]';
};

/** True when the documented rules give `v` a canonical form. */
function encodable(v: unknown, depth = 0, ancestors: object[] = []): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v !== 'object') return false; // undefined (at the top), symbol, function, bigint
  if (depth >= MAX_PAYLOAD_DEPTH || ancestors.includes(v)) return false;
  const inner = [...ancestors, v];
  const child = (x: unknown): boolean => encodable(x, depth + 1, inner);
  try {
    if (Array.isArray(v)) {
      if (Object.keys(v).length !== v.length) return false; // holes or named members
      return v.every((x) => x === undefined || child(x));
    }
    if (v instanceof Date) return !Number.isNaN(v.getTime());
    if (isBinary(v)) return true;
    if (v instanceof Map) return [...v].every(([k, x]) => child(k) && child(x));
    if (v instanceof Set) return [...v].every(child);
    if (!isPlain(v)) return false;
    if (Object.getOwnPropertySymbols(v).length > 0) return false;
    return Object.values(v).every((x) => x === undefined || child(x));
  } catch {
    return false; // a getter threw
  }
}

/** Sameness of two encodable values under the documented equalities (-0 is 0, undefined members are absent, order of Map/Set/object members does not matter, Buffer is Uint8Array). */
function sameData(a: unknown, b: unknown): boolean {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameData(x, b[i]));
  }
  if (a instanceof Date || b instanceof Date) return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  if (isBinary(a) || isBinary(b)) return isBinary(a) && isBinary(b) && binaryType(a) === binaryType(b) && binaryBytes(a).equals(binaryBytes(b));
  if (a instanceof Map || b instanceof Map) {
    return a instanceof Map && b instanceof Map && sameMultiset([...a], [...b], (x, y) => sameData(x[0], y[0]) && sameData(x[1], y[1]));
  }
  if (a instanceof Set || b instanceof Set) return a instanceof Set && b instanceof Set && sameMultiset([...a], [...b], sameData);
  const members = (o: object) => Object.entries(o).filter(([, x]) => x !== undefined);
  const ma = members(a);
  const mb = new Map(members(b));
  return ma.length === mb.size && ma.every(([k, x]) => mb.has(k) && sameData(x, mb.get(k)));
}

/** Equal multisets under an equivalence relation (greedy matching is exact for one). */
function sameMultiset<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  if (a.length !== b.length) return false;
  const unused = [...b];
  return a.every((x) => {
    const i = unused.findIndex((y) => same(x, y));
    if (i < 0) return false;
    unused.splice(i, 1);
    return true;
  });
}

// ---- value transformations ------------------------------------------------------------------------

/** The same data in another shape: members and entries reordered, -0/0, Buffer/Uint8Array, undefined members. */
function reshape(r: Random, v: unknown): unknown {
  if (typeof v === 'number' && v === 0) return r.chance(0.5) ? -0 : 0;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? undefined : reshape(r, x)));
  if (v instanceof Date) return new Date(v.getTime());
  if (v instanceof Uint8Array) return r.chance(0.5) ? Buffer.from(v) : new Uint8Array(v);
  if (isBinary(v)) return v;
  if (v instanceof Map) return new Map(r.shuffle([...v]).map(([k, x]) => [reshape(r, k), reshape(r, x)]));
  if (v instanceof Set) return new Set(r.shuffle([...v]).map((x) => reshape(r, x)));
  const out: Record<string, unknown> = Object.getPrototypeOf(v) === null ? Object.create(null) : {};
  for (const [k, x] of r.shuffle(Object.entries(v))) out[k] = x === undefined ? undefined : reshape(r, x);
  if (r.chance(0.3)) out[`u${r.int(3)}`] ??= undefined;
  return out;
}

/** Look-alikes of `v`: what a naive encoding would confuse it with (none when `v` cannot even be read). */
function confusers(v: unknown): unknown[] {
  try {
    return lookAlikes(v);
  } catch {
    return [];
  }
}

function lookAlikes(v: unknown): unknown[] {
  const out: unknown[] = [[v], { v }];
  if (typeof v !== 'symbol' && (typeof v !== 'object' || v === null)) out.push(String(v));
  if (v === null) out.push(undefined, 'null', 0, false, []);
  if (typeof v === 'number') out.push(String(v), [v], -v);
  if (typeof v === 'string') out.push(v.replace(/[\uD800-\uDFFF]/g, '\uFFFD'), `${v} `, Buffer.from(v));
  if (v instanceof Date && !Number.isNaN(v.getTime())) out.push(v.toISOString(), v.getTime(), { $canonical: 'Date', iso: v.toISOString() });
  if (v instanceof Uint8Array) {
    const base64 = Buffer.from(v).toString('base64');
    out.push(
      { $bytes: base64 },
      { $canonical: 'bytes', base64 },
      { type: 'Buffer', data: [...v] },
      [...v],
      new Uint8ClampedArray(v),
      v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength),
      Buffer.from(v).toString('utf8'),
    );
  }
  if (v instanceof Map)
    out.push(Object.fromEntries([...v].map(([k, x]) => [String(k), x])), [...v], new Set(v.keys()), new Map([...v].map(([k, x]) => [x, k])));
  if (v instanceof Set) out.push([...v], new Map([...v].map((x) => [x, x])));
  if (Array.isArray(v))
    out.push(
      v.map((x) => (x === undefined ? null : x)),
      Object.assign({}, v),
      new Set(v),
    );
  if (v && typeof v === 'object' && isPlain(v)) out.push(new Map(Object.entries(v)), { ...v, $canonical: 'Map' }, Object.entries(v));
  return out;
}

type Attempt = { ok: true; digest: string; text: string } | { ok: false; error: unknown };

function attempt(v: unknown): Attempt {
  try {
    return { ok: true, digest: payloadDigest(v), text: canonicalJson(v) };
  } catch (error) {
    return { ok: false, error };
  }
}

const describeValue = (v: unknown): string => inspect(v, { depth: 4, breakLength: Infinity, maxStringLength: 200 });

/** Plain JSON data: what earlier versions digested too (no tags, no undefined elements, no `$canonical` members). */
function isPlainJson(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return encodable(v) && v.every((x) => x !== undefined && isPlainJson(x));
  if (typeof v !== 'object' || !isPlain(v) || !encodable(v)) return false;
  return Object.entries(v).every(([k, x]) => !/^\$+canonical$/.test(k) && (x === undefined || isPlainJson(x)));
}

/** The earlier canonical text of plain JSON: JSON with members sorted by code units. */
function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const members = Object.entries(v).filter(([, x]) => x !== undefined);
  members.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${members.map(([k, x]) => `${JSON.stringify(k)}:${sortedJson(x)}`).join(',')}}`;
}

// ---- properties ---------------------------------------------------------------------------------

describe.each(SEEDS)('digest properties (seed %i)', (seed) => {
  const r = new Random(seed);
  const values = Array.from({ length: VALUES_PER_SEED }, () => genValue(r));

  test('no raw error escapes: every input gets a digest of JSON text, or an InvalidPayloadError, exactly as the model says', () => {
    let digested = 0;
    for (const v of values) {
      const result = attempt(v);
      if (result.ok) {
        digested++;
        expect(result.digest).toMatch(/^[0-9a-f]{64}$/);
        expect(() => JSON.parse(result.text)).not.toThrow();
      } else {
        expect(result.error).toBeInstanceOf(InvalidPayloadError);
      }
      if (result.ok !== encodable(v))
        throw new Error(`seed ${seed}: digest ${result.ok ? 'accepted' : 'refused'} ${describeValue(v)}, the model says otherwise`);
    }
    // Both branches are visited in earnest.
    expect(digested).toBeGreaterThan(VALUES_PER_SEED * 0.3);
    expect(VALUES_PER_SEED - digested).toBeGreaterThan(VALUES_PER_SEED * 0.1);
  });

  test('no two distinct inputs collide: among generated values and their look-alikes, one digest means the same data', () => {
    const byDigest = new Map<string, unknown>();
    let compared = 0;
    for (const v of values.flatMap((x) => [x, ...confusers(x)])) {
      const result = attempt(v);
      if (!result.ok) continue;
      const earlier = byDigest.get(result.digest);
      if (byDigest.has(result.digest)) {
        compared++;
        if (!sameData(earlier, v)) throw new Error(`seed ${seed}: collision between ${describeValue(earlier)} and ${describeValue(v)}`);
      } else {
        byDigest.set(result.digest, v);
      }
    }
    expect(byDigest.size).toBeGreaterThan(VALUES_PER_SEED * 0.5);
    expect(compared).toBeGreaterThan(0); // equal data did meet (e.g. 0 and -0, equal leaves)
  });

  test('plain JSON data keeps the canonical text (and so the digest) it had before: stored records still match', () => {
    let plain = 0;
    for (const v of values) {
      if (!isPlainJson(v)) continue;
      plain++;
      expect(canonicalJson(v)).toBe(sortedJson(v));
    }
    expect(plain).toBeGreaterThan(VALUES_PER_SEED * 0.2);
  });

  test('canonical: the same data in another shape (member order, Map/Set order, -0, Buffer/Uint8Array, undefined members) has the same digest', () => {
    for (const v of values) {
      if (!encodable(v)) continue;
      const other = reshape(r, v);
      expect(sameData(v, other)).toBe(true);
      if (payloadDigest(other) !== payloadDigest(v)) throw new Error(`seed ${seed}: ${describeValue(v)} and its reshape digest differently`);
    }
  });
});
