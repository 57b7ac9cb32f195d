import { bodyBytes } from '../../src/messaging/bodyBytes';
import { decodeBody } from '../../src/messaging/body';
import { jsonDepth, jsonText, MAX_RECURSIVE_JSON_DEPTH } from '../../src/messaging/jsonText';
import { z } from 'zod';

/** A body of `depth` nested arrays as the trigger hands it over (parsed by `@azure/functions`' JSON.parse). */
const nested = (depth: number) => JSON.parse('['.repeat(depth) + ']'.repeat(depth)) as unknown;

describe('jsonText: JSON of untrusted bodies without recursion their shape can overflow', () => {
  test('a 10 KB body of 5,000 nested arrays: JSON.stringify overflows, jsonText writes the same text back', () => {
    const body = nested(5000);
    expect(() => JSON.stringify(nested(200_000))).toThrow(RangeError); // what the consumer did before
    expect(jsonDepth(body)).toBe(MAX_RECURSIVE_JSON_DEPTH + 1); // stops counting past the limit
    expect(jsonText(body)).toBe('['.repeat(5000) + ']'.repeat(5000));
    expect(jsonText(nested(200_000))).toHaveLength(400_000);
    expect(bodyBytes(nested(200_000)).length).toBe(400_000);
  });

  test('deep objects come out as JSON.stringify writes them (undefined members left out, undefined elements null)', () => {
    let value: unknown = { a: [1, 'x"é', null, { b: undefined, c: true }] };
    for (let i = 0; i < 400; i++) value = { k: value, arr: [undefined, 2.5, -0] };
    expect(jsonDepth(value)).toBeGreaterThan(MAX_RECURSIVE_JSON_DEPTH);
    expect(jsonText(value)).toBe(JSON.stringify(value));
    expect(jsonDepth({ a: [[1]] })).toBe(3);
    expect(jsonDepth('text')).toBe(0);
  });

  test('decodeBody measures and refuses a deep body with its reason instead of throwing', () => {
    const schema = z.object({ id: z.string() });
    expect(decodeBody(nested(5000), schema)).toMatchObject({ ok: false, reason: 'invalid-schema' });
    expect(decodeBody({ id: 'x', extra: nested(5000) }, schema)).toEqual({ ok: true, value: { id: 'x' } });
  });
});
