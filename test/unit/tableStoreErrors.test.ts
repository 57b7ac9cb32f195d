import { classifyStoreError, StoreRequestError, StoreUnavailableError, toDomainError } from 'azure-functions-idempotency/internal';

/**
 * How the Table store reads the SDK's failures (packages/idempotency/src/stores/table/storeErrors.ts), one shape at a
 * time: the three conflicts that are answers, the table-level 404/409 that are failures (whichever field carries the
 * code), the refusals that decided nothing, the lost answers that may have landed a write, and the message an operator
 * reads. Every assertion names a class, a flag or a text.
 */
const sdk = (statusCode: number | undefined, code?: string, where: 'details' | 'odata' | 'code' = 'details', message = 'sdk says no') => ({
  statusCode,
  message,
  ...(code === undefined ? {} : where === 'details' ? { details: { errorCode: code } } : where === 'odata' ? { details: { odataError: { code } } } : { code }),
});

describe('classifyStoreError', () => {
  test('409, 412 and 404 about an entity are answers', () => {
    expect(classifyStoreError(sdk(409, 'EntityAlreadyExists'), 'claim')).toBe('exists');
    expect(classifyStoreError(sdk(412, 'UpdateConditionNotSatisfied'), 'complete')).toBe('conditionFailed');
    expect(classifyStoreError(sdk(404, 'ResourceNotFound'), 'read')).toBe('notFound');
    expect(classifyStoreError(sdk(404), 'read')).toBe('notFound');
  });

  test.each(['details', 'odata', 'code'] as const)('a table being deleted (409) or missing (404) is a failure, the code read from %s', (where) => {
    for (const [status, code] of [
      [409, 'TableBeingDeleted'],
      [404, 'TableNotFound'],
    ] as const) {
      let thrown: unknown;
      try {
        classifyStoreError(sdk(status, code, where), 'claim', 'write');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(StoreRequestError);
      expect(thrown).toMatchObject({ operation: 'claim', statusCode: status, message: `table store rejected claim (${status} ${code})` });
    }
  });

  test('the table codes count only with their own status: 409 TableNotFound and 404 TableBeingDeleted stay answers', () => {
    expect(classifyStoreError(sdk(409, 'TableNotFound'), 'claim')).toBe('exists');
    expect(classifyStoreError(sdk(404, 'TableBeingDeleted'), 'read')).toBe('notFound');
  });

  test('anything else is thrown as a domain error', () => {
    expect(() => classifyStoreError(sdk(503, 'ServerBusy'), 'claim', 'write')).toThrow(StoreUnavailableError);
    expect(() => classifyStoreError(sdk(400, 'InvalidInput'), 'claim', 'write')).toThrow(StoreRequestError);
    expect(() => classifyStoreError(undefined, 'claim')).toThrow(StoreUnavailableError);
  });
});

describe('toDomainError', () => {
  test('a domain error passes through unchanged', () => {
    const unavailable = new StoreUnavailableError('x', 'op', undefined, true);
    const rejected = new StoreRequestError('y', 'op', 400);
    expect(toDomainError(unavailable, 'other', 'read')).toBe(unavailable);
    expect(toDomainError(rejected, 'other', 'read')).toBe(rejected);
  });

  test('an http endpoint without allowInsecureConnection: a request error that says nothing was sent and what to do', () => {
    const error = toDomainError({ message: 'Cannot connect to http://x while allowInsecureConnection is false.' }, 'claim', 'write');
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error.message).toMatch(/^table store request claim refused by the TableClient itself: its endpoint is http:\/\/ and the client was created without/);
    expect(error.message).toContain(
      '{ allowInsecureConnection: true }; nothing was sent. Pass that option for a local emulator (Azurite) only, use https:// in Azure',
    );
    expect(error.message).toContain('(SDK: Cannot connect to http://x while allowInsecureConnection is false.)');
    // The same words with a status are the service's answer, not the client's refusal.
    expect(toDomainError({ statusCode: 400, message: 'allowInsecureConnection is false' }, 'claim', 'write')).toMatchObject({
      message: 'table store rejected claim (400)',
    });
    // Another message without a status: no response.
    expect(toDomainError({ message: 'socket hang up' }, 'claim', 'read')).toBeInstanceOf(StoreUnavailableError);
  });

  test.each([
    [408, undefined, true],
    [429, undefined, false],
    [500, 'InternalError', true],
    [503, 'ServerBusy', false],
    [502, undefined, true],
  ])('status %p (%p) on a write: unavailable, may have landed: %p', (status, code, landed) => {
    const error = toDomainError(sdk(status, code), 'complete', 'write') as StoreUnavailableError;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error.writeMayHaveLanded).toBe(landed);
    expect(error.operation).toBe('complete');
    const detail = `${status}${code ? ` ${code}` : ''}`;
    expect(error.message).toBe(
      landed
        ? `table store unavailable during complete (${detail}); the write may have landed (a key may stay claimed until its lease lapses); a retry finds out; retry later`
        : `table store unavailable during complete (${detail}); nothing was decided; retry later`,
    );
  });

  test('no response: refused before sending (ECONNREFUSED, ENOTFOUND, ...) decided nothing; a reset may have landed a write', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']) {
      const error = toDomainError(sdk(undefined, code, 'code'), 'claim', 'write') as StoreUnavailableError;
      expect(error.writeMayHaveLanded).toBe(false);
      expect(error.message).toBe(`table store unavailable during claim (no response ${code}); nothing was decided; retry later`);
    }
    const reset = toDomainError(sdk(undefined, 'ECONNRESET', 'code'), 'claim', 'write') as StoreUnavailableError;
    expect(reset.writeMayHaveLanded).toBe(true);
    expect(reset.message).toBe(
      'table store unavailable during claim (no response ECONNRESET); the write may have landed (a key may stay claimed until its lease lapses); a retry finds out; retry later',
    );
    const bare = toDomainError(sdk(undefined), 'claim', 'write') as StoreUnavailableError;
    expect(bare.writeMayHaveLanded).toBe(true);
    expect(bare.message).toContain('(no response);');
  });

  test('a read decides nothing; without a kind the message says both', () => {
    const read = toDomainError(sdk(500), 'lookup', 'read') as StoreUnavailableError;
    expect(read.writeMayHaveLanded).toBe(false);
    expect(read.message).toBe('table store unavailable during lookup (500); nothing was decided; retry later');
    const unknown = toDomainError(sdk(500), 'lookup') as StoreUnavailableError;
    expect(unknown.writeMayHaveLanded).toBe(false);
    expect(unknown.message).toBe('table store unavailable during lookup (500); a read decided nothing, a write may have landed; retry later');
  });

  test('another 4xx: a request error with its status and code', () => {
    const error = toDomainError(sdk(403, 'AuthorizationFailure'), 'claim', 'write');
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({ statusCode: 403, operation: 'claim', message: 'table store rejected claim (403 AuthorizationFailure)' });
    expect(toDomainError(sdk(499), 'claim')).toBeInstanceOf(StoreRequestError);
  });
});
