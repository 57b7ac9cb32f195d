import { markerDocument, rowDocument, ttlSeconds, TTL_MARGIN_SECONDS } from 'azure-functions-idempotency/internal';
import { classifyCosmosStoreError, cosmosStoreError } from 'azure-functions-idempotency/internal';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { RecordStatus } from 'azure-functions-idempotency/internal';

describe('Cosmos documents: ttl', () => {
  const now = 1_800_000_000_000;
  test('whole seconds to the later of retention end and lease end, rounded up, plus the skew margin', () => {
    expect(ttlSeconds(now, now + 3_600_000, 0)).toBe(3_600 + TTL_MARGIN_SECONDS);
    expect(ttlSeconds(now, now + 60_000, now + 7_200_000)).toBe(7_200 + TTL_MARGIN_SECONDS); // a lease longer than the retention
    expect(ttlSeconds(now, now + 1, 0)).toBe(1 + TTL_MARGIN_SECONDS); // 1 ms rounds up to a second, never 0 (0 is invalid)
    expect(ttlSeconds(now, now + 1_500, 0)).toBe(2 + TTL_MARGIN_SECONDS);
  });

  test('a marker and its rows share the partition key value and the ttl; row properties are nested, nulls left out', () => {
    const marker = markerDocument(
      { key: { consumer: 'c', key: 'k' }, recordId: 'r1', digest: 'd', createdAtMs: now, nowMs: now, retentionMs: 60_000 },
      { status: RecordStatus.InProgress, ownerId: 'o', attempt: 1, leaseExpiresAtMs: now + 120_000, resultJson: undefined, localRows: ['row'] },
    );
    expect(marker).toMatchObject({ id: 'r1', recordId: 'r1', ttl: 120 + TTL_MARGIN_SECONDS, retentionExpiresAtMs: now + 60_000 });
    expect(rowDocument(marker, { name: 'row', properties: { id: 'x', gone: null } })).toEqual({
      id: 'r1~row',
      recordId: 'r1',
      kind: 'row',
      properties: { id: 'x' },
      ttl: marker.ttl,
    });
  });
});

describe('Cosmos store errors: what each answer says was decided', () => {
  test('409, 412 and 404 are decisions', () => {
    expect(classifyCosmosStoreError({ code: 409 }, 'claim', 'write')).toBe('exists');
    expect(classifyCosmosStoreError({ code: 412 }, 'complete', 'write')).toBe('conditionFailed');
    expect(classifyCosmosStoreError({ code: 404 }, 'read', 'read')).toBe('notFound');
  });

  test.each([
    ['429 throttled', { code: 429 }, false],
    ['503 unavailable', { code: 503 }, false],
    ['connection refused', { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }, false],
    ['a batch refused (the SDK keeps only the message)', { message: 'Batch request error: connect ECONNREFUSED 127.0.0.1:1' }, false],
    ['500', { code: 500 }, true],
    ['408 timeout', { code: 408 }, true],
    ['no answer', { message: 'socket hang up' }, true],
  ])('a write failing with %s is retryable; may have landed: %s', (_what, error, mayHaveLanded) => {
    const domain = cosmosStoreError(error, 'claim', 'write');
    expect(domain).toBeInstanceOf(StoreUnavailableError);
    expect(domain).toMatchObject({ retryable: true, writeMayHaveLanded: mayHaveLanded });
    expect(cosmosStoreError(error, 'read', 'read')).toMatchObject({ writeMayHaveLanded: false });
  });

  test('400, 401, 403 and 413 are StoreRequestError (not retryable), never a decision', () => {
    for (const code of [400, 401, 403, 413]) {
      expect(() => classifyCosmosStoreError({ code }, 'claim', 'write')).toThrow(StoreRequestError);
      expect(cosmosStoreError({ code }, 'claim', 'write').retryable).toBe(false);
    }
  });
});
