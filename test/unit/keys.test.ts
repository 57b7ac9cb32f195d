import { InvalidKeyError, keyFromBusinessKey, keyFromCloudEvent, keyFromMessageId, scopedKeyString, MAX_KEY_LENGTH } from '../../src/core';

describe('keys', () => {
  test('keyFromMessageId: scopes the MessageId by consumer', () => {
    expect(keyFromMessageId('payments', 'pay-1')).toEqual({ consumer: 'payments', key: 'pay-1' });
    expect(keyFromMessageId('payments', 42)).toEqual({ consumer: 'payments', key: '42' });
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
    expect(() => keyFromBusinessKey('orders', {} as { orderId?: string }, (p) => p.orderId)).toThrow(/business key is missing/);
    expect(() =>
      keyFromBusinessKey('orders', null as unknown as { orderId: string }, (p) => p.orderId),
    ).toThrow(InvalidKeyError);
  });
});
