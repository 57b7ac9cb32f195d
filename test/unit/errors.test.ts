import {
  ConfigurationError,
  IdempotencyError,
  InvalidKeyError,
  InvalidPayloadError,
  KeyInProgressError,
  KeyReusedError,
  LeaseLostError,
  ResultTooLargeError,
  StoreRequestError,
  StoreUnavailableError,
  UnknownRecordStatusError,
} from 'azure-functions-idempotency/internal';

// What a caller or an operator reads off the core's errors (packages/idempotency/src/protocol/errors.ts): messages,
// flags, names and causes.

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
