import { StoreRequestError } from './errors';

/**
 * The ETag a conditional write (If-Match: completion, release, renewal, takeover, reopen) is made on, checked
 * before any request is sent. An undefined or empty ETag is refused: `@azure/data-tables` sends If-Match `*` for an
 * undefined one (any version matches: the write would overwrite another claimant's record), and Cosmos DB an
 * empty condition. Only a claim or record as the store returned it carries a usable ETag.
 * @throws StoreRequestError (not retryable) naming the operation, when `etag` is undefined or empty.
 * @example requireConditionEtag(claim.etag, 'complete', 'table store') // returns claim.etag
 */
export function requireConditionEtag(etag: string | undefined, operation: string, storeName: string): string {
  if (typeof etag === 'string' && etag !== '') return etag;
  throw new StoreRequestError(
    `${storeName} refused ${operation}: the claim's ETag is ${etag === '' ? 'empty' : String(etag)}, and a conditional write ` +
      'without one would match any version of the record (If-Match *); pass the claim (or record) as the store returned it',
    operation,
    undefined,
  );
}
