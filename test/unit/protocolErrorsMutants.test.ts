import {
  assertValidKey,
  CompletedKeyCache,
  ConfigurationError,
  IdempotencyError,
  InvalidKeyError,
  InvalidPayloadError,
  KeyInProgressError,
  KeyReusedError,
  keyFromBusinessKey,
  keyFromCloudEvent,
  keyFromMessageId,
  LeaseLostError,
  MAX_CONSUMER_LENGTH,
  RecordStatus,
  ResultTooLargeError,
  StoreRequestError,
  StoreUnavailableError,
  UnknownRecordStatusError,
  type IdempotencyRecord,
} from 'azure-functions-idempotency/internal';
import { FakeClock } from '../support/tables';

// What a caller or an operator reads off the core's errors, keys and completed-key cache (errors.ts, keys.ts,
// CompletedKeyCache.ts): messages, flags, names, causes, the cache's bounds and order.

describe('errors: messages, flags and causes', () => {
  test('the base error: its class name, not retryable by default, a cause only when one is given', () => {
    const plain = new IdempotencyError('m');
    expect([plain.name, plain.message, plain.retryable, 'cause' in plain]).toEqual(['IdempotencyError', 'm', false, false]);
    const cause = new Error('low');
    const wrapped = new IdempotencyError('m', { cause, retryable: true });
    expect([wrapped.cause, wrapped.retryable]).toEqual([cause, true]);
    expect(new InvalidKeyError('k').name).toBe('InvalidKeyError');
    expect(new InvalidPayloadError('p').name).toBe('InvalidPayloadError');
    expect(new ConfigurationError('c')).toMatchObject({ name: 'ConfigurationError', retryable: false });
  });

  test('a result too large names its size and the limit', () => {
    expect(new ResultTooLargeError(40_000, 32_768)).toMatchObject({
      name: 'ResultTooLargeError',
      message: 'stored result is 40000 bytes, more than the limit of 32768 bytes',
      sizeBytes: 40_000,
      maxBytes: 32_768,
      retryable: false,
    });
  });

  test('an unavailable store is retryable; a write may have landed only when said so', () => {
    const cause = new Error('ECONNREFUSED');
    expect(new StoreUnavailableError('down', 'claim', cause)).toMatchObject({
      message: 'down',
      operation: 'claim',
      cause,
      retryable: true,
      writeMayHaveLanded: false,
    });
    expect(new StoreUnavailableError('down', 'claim', undefined, true).writeMayHaveLanded).toBe(true);
    expect('cause' in new StoreUnavailableError('down', 'get')).toBe(false);
  });

  test('a refused request is not retryable and keeps its status code and cause', () => {
    const cause = new Error('400');
    expect(new StoreRequestError('bad', 'complete', 400, cause)).toMatchObject({
      name: 'StoreRequestError',
      operation: 'complete',
      statusCode: 400,
      cause,
      retryable: false,
    });
  });

  test('a lost lease names the attempt, the key and what was refused', () => {
    expect(new LeaseLostError('8:payments:pay-1', 2, 'complete')).toMatchObject({
      message: 'claim attempt 2 of "8:payments:pay-1" was taken over or removed; complete refused',
      scopedKey: '8:payments:pay-1',
      attempt: 2,
      operation: 'complete',
      retryable: false,
    });
  });

  test('an unknown status is retryable and tells the operator what to do', () => {
    expect(new UnknownRecordStatusError('8:payments:pay-1', 'ARCHIVED')).toMatchObject({
      message:
        'record of "8:payments:pay-1" has status "ARCHIVED", which this version does not know; ' +
        'refusing to take it over, since its work may have completed (deploy the version that wrote it, or fix the record)',
      status: 'ARCHIVED',
      retryable: true,
    });
  });

  test('a key in progress is retryable and says until when; a reused key is not, and names both digests', () => {
    expect(new KeyInProgressError('8:payments:pay-1', 5_000, 2)).toMatchObject({
      message: 'key "8:payments:pay-1" is in progress elsewhere (attempt 2, lease until 5000)',
      leaseExpiresAtMs: 5_000,
      attempt: 2,
      retryable: true,
    });
    expect(new KeyReusedError('8:payments:pay-1', 'aaa', 'bbb')).toMatchObject({
      message: 'key "8:payments:pay-1" was used before for a different payload (stored digest aaa, this one bbb)',
      storedDigest: 'aaa',
      digest: 'bbb',
      retryable: false,
    });
  });
});

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

function completed(key: string, overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    recordId: `id-${key}`,
    consumer: 'payments',
    key,
    status: RecordStatus.Completed,
    digest: 'a'.repeat(64),
    result: { n: 1 },
    attempt: 1,
    ownerId: 'o',
    leaseExpiresAtMs: 0,
    retentionExpiresAtMs: 2_000,
    createdAtMs: 1,
    updatedAtMs: 1,
    localRows: [],
    etag: 'e',
    ...overrides,
  };
}

describe('the completed-key cache', () => {
  test('its size must be a positive integer, named in the error', () => {
    expect(new CompletedKeyCache(1, new FakeClock()).maxEntries).toBe(1);
    for (const size of [0, -1, 1.5, NaN]) {
      expect(() => new CompletedKeyCache(size, new FakeClock())).toThrow(new ConfigurationError(`cache size must be a positive integer, got ${size}`));
    }
    expect(() => new CompletedKeyCache(1, new FakeClock(), 'x' as never)).toThrow(new ConfigurationError('cacheable must be a function'));
  });

  test('bounded, least recently used out first: a read makes an entry the newest', () => {
    const cache = new CompletedKeyCache(2, new FakeClock(0));
    cache.put('a', completed('a'));
    cache.put('b', completed('b'));
    expect(cache.get('a')?.key).toBe('a'); // a is now the newest
    cache.put('c', completed('c'));
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.key).toBe('a');
    expect(cache.get('c')?.key).toBe('c');
  });

  test('a put of a key already held replaces it and makes it the newest', () => {
    const cache = new CompletedKeyCache(2, new FakeClock(0));
    cache.put('a', completed('a', { result: 1 }));
    cache.put('b', completed('b'));
    cache.put('a', completed('a', { result: 2 }));
    cache.put('c', completed('c'));
    expect(cache.get('a')?.result).toBe(2);
    expect(cache.get('b')).toBeUndefined();
  });

  test('an entry answers until its retention ends, not at it; then it is dropped', () => {
    const clock = new FakeClock(1_999);
    const cache = new CompletedKeyCache(5, clock);
    cache.put('a', completed('a'));
    expect(cache.get('a')?.key).toBe('a');
    clock.now = 2_000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
    clock.now = 0;
    expect(cache.get('a')).toBeUndefined();
  });

  test('answers are copies: changing one changes neither the cache nor the record put', () => {
    const cache = new CompletedKeyCache(5, new FakeClock(0));
    const original = completed('a', { result: { n: 1 } });
    cache.put('a', original);
    (original.result as { n: number }).n = 9;
    const first = cache.get('a')!;
    (first.result as { n: number }).n = 7;
    expect(cache.get('a')?.result).toEqual({ n: 1 });
  });
});
