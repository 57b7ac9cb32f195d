import {
  assertValidKey,
  InvalidKeyError,
  keyFromBusinessKey,
  keyFromCloudEvent,
  keyFromMessageId,
  scopedKeyString,
  tableAddress,
  MAX_KEY_LENGTH,
  MAX_CONSUMER_LENGTH,
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

// What the key helpers accept, and the errors a caller reads (keys.ts).
describe('keys: what the helpers accept and the errors they give', () => {
  test('a MessageId that arrived as a number names the number, -0 as -0', () => {
    expect(() => keyFromMessageId('payments', 42)).toThrow(
      new InvalidKeyError(
        'MessageId arrived as the number 42: @azure/functions parses metadata text that is JSON, ' +
          'so the text the broker saw is lost ("42", "42.0", "4.2e1" and " 42" all arrive as 42) and two MessageIds could share a key; ' +
          'use MessageIds that are not JSON numbers (e.g. "order-42"), or pass keyOf (a business id in the body)',
      ),
    );
    expect(() => keyFromMessageId('payments', -0)).toThrow(/^MessageId arrived as the number -0:/);
    expect(() => keyFromMessageId('payments', 0)).toThrow(/^MessageId arrived as the number 0:/);
  });

  test('the errors name what is wrong: type, length, the lone surrogate and where it is', () => {
    expect(() => keyFromMessageId('payments', true)).toThrow(new InvalidKeyError('MessageId must be a string, got boolean'));
    expect(() => keyFromMessageId('payments', 'x'.repeat(8193))).toThrow(new InvalidKeyError('MessageId is 8193 characters, more than 8192'));
    expect(keyFromMessageId('payments', 'x'.repeat(8192)).key).toHaveLength(8192);
    expect(() => keyFromMessageId('payments', 'ab\uDBFFc')).toThrow(
      new InvalidKeyError('MessageId has a lone UTF-16 surrogate U+DBFF at index 2: it is not valid Unicode text'),
    );
    expect(() => keyFromMessageId('payments', '\uDC0A')).toThrow('MessageId has a lone UTF-16 surrogate U+DC0A at index 0');
    expect(() => keyFromMessageId('payments', ' \t')).toThrow(new InvalidKeyError('MessageId is empty'));
    expect(keyFromMessageId('payments', ' a ').key).toBe(' a ');
  });

  test(`the consumer name: at most ${MAX_CONSUMER_LENGTH} characters, no surrounding white space (quoted in the error)`, () => {
    expect(keyFromMessageId('c'.repeat(128), 'k').consumer).toHaveLength(128);
    expect(() => keyFromMessageId('c'.repeat(129), 'k')).toThrow(new InvalidKeyError('consumer name is 129 characters, more than 128'));
    expect(() => keyFromMessageId('payments ', 'k')).toThrow(new InvalidKeyError('consumer name "payments " has leading or trailing white space'));
    expect(() => keyFromMessageId(7 as unknown as string, 'k')).toThrow(new InvalidKeyError('consumer name must be a string, got number'));
  });

  test('a key built by hand: null is named null; a CloudEvent that is null has no source', () => {
    expect(() => assertValidKey(null)).toThrow(new InvalidKeyError('an idempotency key must be an object { consumer, key }, got null'));
    expect(() => assertValidKey(7)).toThrow(new InvalidKeyError('an idempotency key must be an object { consumer, key }, got number'));
    expect(() => keyFromCloudEvent('c', null as never)).toThrow(new InvalidKeyError('CloudEvent source is missing'));
    expect(keyFromCloudEvent('c', { source: '/orders', id: '7' })).toEqual({ consumer: 'c', key: '["/orders","7"]' });
  });

  test('a CloudEvent whose source and id fit alone but not joined is refused, naming the joined key', () => {
    expect(() => keyFromCloudEvent('c', { source: 's'.repeat(5_000), id: 'i'.repeat(5_000) })).toThrow(
      new InvalidKeyError('CloudEvent key is 10007 characters, more than 8192'),
    );
  });

  test('a business key: a finite number is its text; the function failing is the cause; Infinity or an object is refused', () => {
    expect(keyFromBusinessKey('orders', { id: 42 }, (p) => p.id)).toEqual({ consumer: 'orders', key: '42' });
    expect(keyFromBusinessKey('orders', { id: 0 }, (p) => p.id).key).toBe('0');
    expect(() => keyFromBusinessKey('orders', { id: Infinity }, (p) => p.id)).toThrow(new InvalidKeyError('business key must be a string, got number'));
    expect(() => keyFromBusinessKey('orders', { id: NaN }, (p) => p.id)).toThrow('business key must be a string, got number');
    const failure = new TypeError('no id');
    let caught: unknown;
    try {
      keyFromBusinessKey('orders', {}, () => {
        throw failure;
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidKeyError);
    expect(caught).toMatchObject({ message: 'business-key function threw', cause: failure });
    expect(() => keyFromBusinessKey('orders ', { id: 'o' }, (p) => p.id)).toThrow(/leading or trailing white space/);
  });
});
