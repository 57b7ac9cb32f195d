import { canonicalJson, InvalidPayloadError, payloadDigest } from 'azure-functions-idempotency/internal';

describe('digest', () => {
  test('property order does not change the digest', () => {
    const a = { paymentId: 'p1', amount: 100, nested: { x: 1, y: [1, { b: 2, a: 1 }] } };
    const b = { nested: { y: [1, { a: 1, b: 2 }], x: 1 }, amount: 100, paymentId: 'p1' };
    expect(payloadDigest(a)).toBe(payloadDigest(b));
    expect(payloadDigest(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  test('any change of a value changes the digest', () => {
    expect(payloadDigest({ amount: 100 })).not.toBe(payloadDigest({ amount: 101 }));
    expect(payloadDigest({ amount: 100 })).not.toBe(payloadDigest({ amount: '100' }));
    expect(payloadDigest([1, 2])).not.toBe(payloadDigest([2, 1]));
  });

  test('canonical form: sorted keys, undefined members dropped, no whitespace; an undefined element is not null', () => {
    expect(canonicalJson({ b: 1, a: undefined, c: [null, 'x'] })).toBe('{"b":1,"c":[null,"x"]}');
    expect(canonicalJson([undefined, 'x'])).toBe('[{"$canonical":"undefined"},"x"]');
    expect(payloadDigest([undefined])).not.toBe(payloadDigest([null]));
  });

  test('values without a canonical form are rejected with their path', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => payloadDigest(cyclic)).toThrow(InvalidPayloadError);
    expect(() => payloadDigest({ a: [Number.NaN] })).toThrow(/non-finite number at \$\.a\[0\]/);
    expect(() => payloadDigest({ f: () => 1 })).toThrow(/function at \$\.f/);
  });

  test('bytes are a tagged value at any depth: never equal to the JSON text they hold', () => {
    expect(canonicalJson(Buffer.from('abc'))).toBe('{"$canonical":"bytes","base64":"YWJj"}');
    expect(payloadDigest(Buffer.from('"abc"'))).not.toBe(payloadDigest('abc'));
    expect(payloadDigest(Buffer.from('{}'))).not.toBe(payloadDigest({}));
    expect(payloadDigest(new Uint8Array([1, 2]))).toBe(payloadDigest(Buffer.from([1, 2])));
  });

  test('Maps and Sets digest by what they hold, in any insertion order', () => {
    expect(payloadDigest(new Map([['a', 1]]))).not.toBe(payloadDigest(new Map([['a', 2]])));
    expect(payloadDigest(new Map([['a', 1]]))).not.toBe(payloadDigest(new Map()));
    expect(payloadDigest(new Set([1]))).not.toBe(payloadDigest(new Set([2])));
    expect(payloadDigest(new Set([1]))).not.toBe(payloadDigest(new Map()));
    expect(payloadDigest(new Map())).not.toBe(payloadDigest({}));
    expect(payloadDigest(new Set([1, 2]))).not.toBe(payloadDigest([1, 2]));
    expect(
      payloadDigest(
        new Map([
          ['a', 1],
          ['b', 2],
        ]),
      ),
    ).toBe(
      payloadDigest(
        new Map([
          ['b', 2],
          ['a', 1],
        ]),
      ),
    );
    expect(payloadDigest(new Set(['x', 'y']))).toBe(payloadDigest(new Set(['y', 'x'])));
    expect(payloadDigest(new Map([[1, 'a']]))).not.toBe(payloadDigest(new Map([['1', 'a']])));
  });

  test('a Buffer never collides with a plain object that imitates a tag', () => {
    const buffer = Buffer.from('hi');
    expect(payloadDigest(buffer)).not.toBe(payloadDigest({ $bytes: buffer.toString('base64') }));
    expect(payloadDigest(buffer)).not.toBe(payloadDigest({ $canonical: 'bytes', base64: buffer.toString('base64') }));
    expect(canonicalJson({ $canonical: 1, $$canonical: 2 })).toBe('{"$$$canonical":2,"$$canonical":1}');
  });

  test('Dates are tagged (not their ISO string); an invalid Date is a clear error', () => {
    const iso = '2026-01-02T03:04:05.006Z';
    expect(payloadDigest(new Date(iso))).not.toBe(payloadDigest(iso));
    expect(payloadDigest({ at: new Date(iso) })).toBe(payloadDigest({ at: new Date(iso) }));
    expect(() => payloadDigest({ at: new Date(Number.NaN) })).toThrow(InvalidPayloadError);
    expect(() => payloadDigest({ at: new Date(Number.NaN) })).toThrow(/invalid Date at \$\.at/);
  });

  test('typed arrays are tagged by type: the same bytes in another view differ', () => {
    const bytes = new Uint8Array([0, 0, 128, 63]);
    expect(payloadDigest(new Float32Array(bytes.buffer))).not.toBe(payloadDigest(new Int32Array(bytes.buffer)));
    expect(payloadDigest(new Float32Array(bytes.buffer))).not.toBe(payloadDigest(bytes));
    expect(payloadDigest(bytes.buffer)).not.toBe(payloadDigest(bytes));
    expect(canonicalJson(new Uint16Array([1]))).toBe('{"$canonical":"Uint16Array","base64":"AQA="}');
  });

  test('very deep nesting is a clear error, never a RangeError', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => payloadDigest(deep)).toThrow(InvalidPayloadError);
    expect(() => payloadDigest(deep)).toThrow(/nests deeper than 1000 levels/);
    let ok: unknown = 'leaf';
    for (let i = 0; i < 999; i++) ok = { a: ok };
    expect(payloadDigest(ok)).toMatch(/^[0-9a-f]{64}$/);
  });

  test('sparse arrays are a clear error (a hole is not null); the canonical text is always JSON', () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(() => canonicalJson([1, , 3])).toThrow(/hole \(sparse array\) at \$\[1\]/);
    expect(() => canonicalJson(new Array(3))).toThrow(InvalidPayloadError);
    const text = canonicalJson({ a: [undefined, new Map([[{ k: 1 }, new Set([new Date(0)])]])], b: Buffer.from('x') });
    expect(() => JSON.parse(text)).not.toThrow();
  });

  test.each([
    ['a symbol', Symbol('s'), /a symbol at \$/],
    ['a bigint', 10n, /a bigint at \$/],
    ['undefined', undefined, /undefined at \$/],
    ['Infinity', { n: Number.POSITIVE_INFINITY }, /non-finite number at \$\.n \(Infinity\)/],
    ['a RegExp', { r: /x/ }, /object of class RegExp at \$\.r/],
    ['an Error', [new Error('x')], /object of class Error at \$\[0\]/],
    [
      'a class instance',
      {
        c: new (class Money {
          amount = 1;
        })(),
      },
      /object of class Money at \$\.c/,
    ],
    ['a boxed string', new String('ab'), /object of class String/],
    ['a symbol-keyed member', { [Symbol('k')]: 1 }, /symbol-keyed property Symbol\(k\)/],
    ['an array with a named member', Object.assign([1], { note: 'x' }), /non-index property "note"/],
    [
      'a throwing getter',
      {
        get x() {
          throw new TypeError('boom');
        },
      },
      /payload cannot be read: boom/,
    ],
    [
      'a revoked proxy',
      (() => {
        const p = Proxy.revocable({}, {});
        p.revoke();
        return p.proxy;
      })(),
      /payload cannot be read/,
    ],
  ])('%s is an InvalidPayloadError naming it, not a raw error', (_what, value, message) => {
    expect(() => payloadDigest(value)).toThrow(InvalidPayloadError);
    expect(() => payloadDigest(value)).toThrow(message);
  });

  test('lone surrogates in strings and member names stay distinct (escaped), from each other and from U+FFFD', () => {
    const digests = ['\uD800', '\uDC00', '\uFFFD', '\uD800\uDC00'].map((s) => payloadDigest({ [s]: s }));
    expect(new Set(digests).size).toBe(4);
  });

  test('-0 digests as 0 (equal numbers, as === says); plain JSON keeps its earlier canonical text', () => {
    expect(payloadDigest({ n: -0 })).toBe(payloadDigest({ n: 0 }));
    expect(canonicalJson({ z: [1.5, 'x', true, null, { b: {}, a: [] }], a: 'é' })).toBe('{"a":"é","z":[1.5,"x",true,null,{"a":[],"b":{}}]}');
  });
});
