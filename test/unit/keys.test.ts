import {
  assertValidKey,
  InvalidKeyError,
  keyFromBusinessKey,
  keyFromCloudEvent,
  keyFromMessageId,
  scopedKeyString,
  tableAddress,
  MAX_KEY_LENGTH,
} from 'azure-functions-idempotency/internal';

describe('keys', () => {
  test('keyFromMessageId: scopes the MessageId by consumer', () => {
    expect(keyFromMessageId('payments', 'pay-1')).toEqual({ consumer: 'payments', key: 'pay-1' });
    // A number is parsed metadata text: "42", "42.0", "4.2e1", " 42" all arrive as 42; the broker's string is lost.
    for (const parsed of [42, 0, -0, 1000, 2 ** 53]) expect(() => keyFromMessageId('payments', parsed)).toThrow(/arrived as the number/);
    expect(keyFromMessageId('payments', '42.0')).toEqual({ consumer: 'payments', key: '42.0' });
  });

  test.each([
    [undefined, /missing/],
    [null, /missing/],
    ['', /empty/],
    ['   ', /empty/],
    [Buffer.from('x'), /must be a string/],
    [{}, /must be a string/],
    ['x'.repeat(MAX_KEY_LENGTH + 1), /more than/],
  ])('keyFromMessageId: %p is a clear InvalidKeyError', (value, message) => {
    expect(() => keyFromMessageId('payments', value)).toThrow(InvalidKeyError);
    expect(() => keyFromMessageId('payments', value)).toThrow(message);
  });

  test('keyFromMessageId: a missing consumer name is an error', () => {
    expect(() => keyFromMessageId('', 'a')).toThrow(/consumer name is empty/);
  });

  test('two consumers of one message get different scoped keys', () => {
    expect(scopedKeyString(keyFromMessageId('payments', 'm1'))).not.toBe(scopedKeyString(keyFromMessageId('audit', 'm1')));
  });

  test('scoped key is unambiguous when the consumer name holds the separator', () => {
    expect(scopedKeyString({ consumer: 'a:b', key: 'c' })).not.toBe(scopedKeyString({ consumer: 'a', key: 'b:c' }));
  });

  test('keyFromCloudEvent: source and id together, joined unambiguously', () => {
    const a = keyFromCloudEvent('c', { source: 'a/b', id: 'c' });
    const b = keyFromCloudEvent('c', { source: 'a', id: 'b/c' });
    expect(a.key).not.toBe(b.key);
    expect(keyFromCloudEvent('c', { source: '/orders', id: '7' })).toEqual(keyFromCloudEvent('c', { source: '/orders', id: '7' }));
    expect(() => keyFromCloudEvent('c', { id: '7' })).toThrow(/CloudEvent source is missing/);
    expect(() => keyFromCloudEvent('c', { source: '/s', id: '' })).toThrow(/CloudEvent id is empty/);
  });

  test('keyFromBusinessKey: uses the function, wraps its failures', () => {
    expect(keyFromBusinessKey('orders', { orderId: 'o-9' }, (p) => p.orderId)).toEqual({ consumer: 'orders', key: 'o-9' });
    const noOrderId: { orderId?: string } = {};
    expect(() => keyFromBusinessKey('orders', noOrderId, (p) => p.orderId)).toThrow(/business key is missing/);
    expect(() => keyFromBusinessKey('orders', null as unknown as { orderId: string }, (p) => p.orderId)).toThrow(InvalidKeyError);
  });

  test.each([
    ['a lone high surrogate', 'pay-\uD800'],
    ['a lone low surrogate', 'pay-\uDC00'],
    ['a reversed pair', 'pay-\uDC00\uD800'],
    ['a high surrogate at the end', '\uD83D'],
  ])('keys: %s is refused (it would hash as U+FFFD and collide)', (_what, value) => {
    expect(() => keyFromMessageId('payments', value)).toThrow(/lone UTF-16 surrogate/);
    expect(() => keyFromCloudEvent('payments', { source: '/s', id: value })).toThrow(InvalidKeyError);
    expect(() => keyFromMessageId(`c${value}`, 'k')).toThrow(/consumer name has a lone UTF-16 surrogate/);
    expect(() => tableAddress({ consumer: 'payments', key: value })).toThrow(InvalidKeyError);
  });

  test('keys: surrogate pairs (e.g. emoji) are valid text and stay distinct from U+FFFD', () => {
    expect(keyFromMessageId('payments', 'pay-\u{1F4B3}').key).toBe('pay-\u{1F4B3}');
    expect(tableAddress({ consumer: 'payments', key: 'pay-\u{1F4B3}' })).not.toEqual(tableAddress({ consumer: 'payments', key: 'pay-\uFFFD' }));
  });

  test.each([' payments', 'payments ', '\tpayments', 'payments\n'])('keys: consumer name %p with surrounding white space is refused', (consumer) => {
    expect(() => keyFromMessageId(consumer, 'a')).toThrow(/leading or trailing white space/);
    expect(() => assertValidKey({ consumer, key: 'a' })).toThrow(InvalidKeyError);
  });

  test.each([
    ['undefined', undefined, /an idempotency key must be an object/],
    ['a string', 'payments:a', /must be an object/],
    ['an undefined key', { consumer: 'payments', key: undefined }, /key is missing/],
    ['a numeric key', { consumer: 'payments', key: 7 }, /key must be a string, got number/],
    ['an empty key', { consumer: 'payments', key: '' }, /key is empty/],
    ['an empty consumer', { consumer: '', key: 'a' }, /consumer name is empty/],
    ['a missing consumer', { key: 'a' }, /consumer name is missing/],
    ['a 1 MiB key', { consumer: 'payments', key: 'x'.repeat(1 << 20) }, /1048576 characters, more than 8192/],
  ])('assertValidKey: %s is an InvalidKeyError', (_what, key, message) => {
    expect(() => assertValidKey(key)).toThrow(InvalidKeyError);
    expect(() => assertValidKey(key)).toThrow(message);
  });
});
