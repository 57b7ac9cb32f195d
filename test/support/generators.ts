/**
 * Seeded generators of the values a caller can pass to the key helpers, the digest and the store:
 * strings with surrogates and separators, numbers with -0/NaN/±Infinity, nested arrays and objects,
 * Map/Set/Buffer/Date/typed arrays, undefined, symbols, functions, bigints, cycles, class instances,
 * throwing getters. Deterministic for a seed, so a failure is reproduced by its seed alone.
 */

/** mulberry32: small, fast, good enough for test data. */
export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
}

/** Pieces strings are made of: separators, quotes, controls, U+FFFD, lone and paired surrogates, tag look-alikes. */
export const STRING_PIECES: readonly string[] = [
  'a',
  'b',
  'A',
  '0',
  '1',
  '9',
  '-',
  '_',
  ' ',
  '  ',
  '\t',
  '\n',
  '\u0000',
  '\u001f',
  '\u007f',
  ':',
  '3:',
  '"',
  '\\',
  '/',
  '#',
  '?',
  '[',
  ']',
  '{',
  '}',
  ',',
  'é',
  'e\u0301',
  'ı',
  '支',
  '\u2028',
  '\uFEFF',
  '\uFFFD',
  '\uD800',
  '\uDBFF',
  '\uDC00',
  '\uDFFF',
  '\uD83D\uDE00',
  '\u{10FFFF}',
  '$',
  '$canonical',
  '$$canonical',
  '$bytes',
  'undefined',
  'null',
  'true',
];

/** A short string of 0..maxPieces pieces. */
export function genString(r: Random, maxPieces = 5): string {
  const n = r.int(maxPieces + 1);
  let s = '';
  for (let i = 0; i < n; i++) s += r.pick(STRING_PIECES);
  return s;
}

export const NUMBERS: readonly number[] = [
  0,
  -0,
  1,
  -1,
  2,
  1.5,
  -2.25,
  0.1,
  1e21,
  1e-7,
  -1e-7,
  2 ** 53,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  Number.MIN_VALUE,
  Number.MAX_VALUE,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
];

class Money {
  constructor(readonly amount: number) {}
}

function genBytes(r: Random, multipleOf = 1): Uint8Array<ArrayBuffer> {
  const n = r.int(4) * multipleOf;
  const bytes = new Uint8Array(new ArrayBuffer(n));
  for (let i = 0; i < n; i++) bytes[i] = r.pick([0, 1, 2, 127, 128, 255]);
  return bytes;
}

const TYPED_ARRAYS = [
  Int8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
] as const;

/** A leaf: any non-container value, valid or not. */
export function genLeaf(r: Random): unknown {
  switch (r.int(20)) {
    case 0:
    case 1:
    case 2:
      return genString(r);
    case 3:
    case 4:
      return r.pick(NUMBERS);
    case 5:
      return r.chance(0.5);
    case 6:
      return null;
    case 7:
      return undefined;
    case 8:
      return r.pick([Symbol('s'), Symbol.for('s'), Symbol.iterator]);
    case 9:
      return r.pick([() => 1, function named() {}, class K {}]);
    case 10:
      return r.pick([0n, 1n, -1n, 2n ** 64n]);
    case 11:
      return r.chance(0.8) ? new Date(r.pick([0, -1, 1_800_000_000_000, 8.64e15])) : new Date(Number.NaN);
    case 12:
      return Buffer.from(genBytes(r));
    case 13:
      return genBytes(r);
    case 14: {
      const Type = r.pick(TYPED_ARRAYS);
      return new Type(genBytes(r, Type.BYTES_PER_ELEMENT).buffer);
    }
    case 15:
      return r.chance(0.5) ? genBytes(r).buffer : new DataView(genBytes(r).buffer);
    case 16:
      return r.pick([/x/g, new Error('e'), new Money(1), new String('ab'), new Number(1), Promise.resolve(1), new WeakMap()]);
    case 17:
      return r.pick(['$canonical', 'bytes', 'undefined', '']);
    case 18:
      return Object.defineProperty({}, 'x', {
        enumerable: true,
        get() {
          throw new TypeError('getter failed');
        },
      });
    default:
      return genString(r, 2);
  }
}

/** Any value, nested up to `depth`; may hold cycles, holes, symbol keys and very deep chains. */
export function genValue(r: Random, depth = 3): unknown {
  if (depth <= 0 || r.chance(0.35)) return genLeaf(r);
  switch (r.int(9)) {
    case 0:
    case 1: {
      const items = Array.from({ length: r.int(4) }, () => genValue(r, depth - 1));
      if (r.chance(0.05)) items.length += 1; // a hole at the end
      if (r.chance(0.03)) Object.assign(items, { extra: 1 });
      return items;
    }
    case 2:
    case 3: {
      const object: Record<string | symbol, unknown> = r.chance(0.1) ? Object.create(null) : {};
      for (let i = r.int(4); i > 0; i--) object[genString(r, 2)] = genValue(r, depth - 1);
      if (r.chance(0.03)) object[Symbol('k')] = 1;
      return object;
    }
    case 4:
      return new Map(Array.from({ length: r.int(3) }, () => [genValue(r, depth - 1), genValue(r, depth - 1)] as const));
    case 5:
      return new Set(Array.from({ length: r.int(3) }, () => genValue(r, depth - 1)));
    case 6: {
      if (!r.chance(0.1)) return [genValue(r, depth - 1)];
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = r.chance(0.5) ? cyclic : [cyclic];
      return cyclic;
    }
    case 7: {
      if (!r.chance(0.05)) return { v: genValue(r, depth - 1) };
      let deep: unknown = 'leaf';
      const levels = r.pick([999, 1000, 1001, 5000]);
      for (let i = 0; i < levels; i++) deep = r.chance(0.5) ? [deep] : { d: deep };
      return deep;
    }
    default:
      return genLeaf(r);
  }
}
