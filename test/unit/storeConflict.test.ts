import { classifyStoreError, conflictOfStatus, StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { classifyCosmosError } from '../../src/orders/cosmosErrors';

describe('store conflicts', () => {
  test('conflict: 409, 412 and 404 are decisions; other statuses are not', () => {
    expect(conflictOfStatus(409)).toBe('exists');
    expect(conflictOfStatus(412)).toBe('conditionFailed');
    expect(conflictOfStatus(404)).toBe('notFound');
    for (const status of [undefined, 200, 400, 408, 429, 500, 503]) expect(conflictOfStatus(status)).toBeUndefined();
  });

  test('conflict: Table and Cosmos errors map the same statuses to the same answers', () => {
    for (const status of [409, 412, 404]) {
      expect(classifyStoreError({ statusCode: status }, 'op')).toBe(conflictOfStatus(status));
      expect(classifyCosmosError({ code: status }, 'op')).toBe(conflictOfStatus(status));
    }
  });

  test('conflict: a table being deleted (409) or missing (404) is a failure, not an answer about an entity', () => {
    expect(() => classifyStoreError({ statusCode: 409, details: { errorCode: 'TableBeingDeleted' } }, 'op')).toThrow(StoreRequestError);
    expect(() => classifyStoreError({ statusCode: 404, details: { errorCode: 'TableNotFound' } }, 'op')).toThrow(StoreRequestError);
    expect(() => classifyStoreError({ statusCode: 503 }, 'op')).toThrow(StoreUnavailableError);
  });
});
