import { canonicalJson, InvalidPayloadError, payloadDigest } from '../../src/core';

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

  test('canonical form: sorted keys, undefined members dropped, no whitespace', () => {
    expect(canonicalJson({ b: 1, a: undefined, c: [undefined, 'x'] })).toBe('{"b":1,"c":[null,"x"]}');
  });

  test('values without a canonical form are rejected with their path', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => payloadDigest(cyclic)).toThrow(InvalidPayloadError);
    expect(() => payloadDigest({ a: [Number.NaN] })).toThrow(/non-finite number at \$\.a\[0\]/);
    expect(() => payloadDigest({ f: () => 1 })).toThrow(/function at \$\.f/);
  });

  test('bytes are hashed as they are', () => {
    expect(payloadDigest(Buffer.from('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
