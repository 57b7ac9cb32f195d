import { z } from 'zod';
import { decodeBody, ParkReason } from '../../src/messaging';

const schema = z.object({ id: z.string().min(1), amount: z.number().int().positive() });

describe('decodeBody', () => {
  test('accepts a parsed object, JSON text and JSON bytes', () => {
    for (const body of [{ id: 'a', amount: 1 }, '{"id":"a","amount":1}', Buffer.from('{"id":"a","amount":1}')]) {
      expect(decodeBody(body, schema)).toEqual({ ok: true, value: { id: 'a', amount: 1 } });
    }
  });

  test('bad JSON, wrong fields and oversized bodies each get their own reason and detail', () => {
    expect(decodeBody('{not json', schema)).toMatchObject({ ok: false, reason: ParkReason.InvalidJson, detail: expect.stringMatching(/not JSON/) });
    expect(decodeBody({ id: '', amount: -1 }, schema)).toMatchObject({
      ok: false,
      reason: ParkReason.InvalidSchema,
      detail: expect.stringMatching(/id: .*; amount: /),
    });
    expect(decodeBody({ id: 'a' }, schema)).toMatchObject({ reason: ParkReason.InvalidSchema, detail: expect.stringMatching(/^amount: /) });
    expect(decodeBody('x'.repeat(2000), schema, 1000)).toMatchObject({ reason: ParkReason.Oversized, detail: 'body is 2000 bytes, more than 1000' });
  });
});
