import { StoreRequestError, StoreUnavailableError, conflictOfStatus, type StoreConflict } from 'azure-functions-idempotency';

/** The Cosmos answers the orders store decides on (the Table store's, see `conflictOfStatus`); anything else becomes a domain error. */
export type CosmosConflict = StoreConflict;

interface CosmosErrorShape {
  code?: number | string;
  statusCode?: number;
  substatus?: number;
}

/** The HTTP status of a Cosmos SDK error (`ErrorResponse.code` is a number), if it has one. */
export function cosmosStatusOf(error: unknown): number | undefined {
  const e = (error ?? {}) as CosmosErrorShape;
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** Statuses after which nothing was decided and a later attempt may succeed. */
export function isRetryableCosmosStatus(status: number | undefined): boolean {
  return status === undefined || status === 408 || status === 410 || status === 429 || status === 449 || status >= 500;
}

/**
 * Classifies a Cosmos SDK error: 409, 412 and 404 come back as a {@link CosmosConflict}; anything
 * else is thrown as a domain error (see {@link cosmosDomainError}). No raw SDK error escapes.
 * @throws StoreUnavailableError | StoreRequestError
 */
export function classifyCosmosError(error: unknown, operation: string): CosmosConflict {
  const status = cosmosStatusOf(error);
  const conflict = conflictOfStatus(status);
  if (conflict) return conflict;
  throw cosmosDomainError(error, operation, status);
}

/**
 * Wraps a Cosmos failure in a domain error: network failures, 408, 410, 429, 449 and 5xx become
 * `StoreUnavailableError` (retryable: the broker should redeliver); other statuses
 * `StoreRequestError` (a bug or a misconfiguration, e.g. 400 or 403).
 */
export function cosmosDomainError(
  error: unknown,
  operation: string,
  status: number | undefined = cosmosStatusOf(error),
): StoreUnavailableError | StoreRequestError {
  if (error instanceof StoreUnavailableError || error instanceof StoreRequestError) return error;
  const substatus = (error as CosmosErrorShape | undefined)?.substatus;
  const detail = `${status ?? 'no response'}${substatus ? `/${substatus}` : ''}`;
  if (isRetryableCosmosStatus(status)) {
    return new StoreUnavailableError(`orders store unavailable during ${operation} (${detail}); nothing was decided, retry later`, operation, error);
  }
  return new StoreRequestError(`orders store rejected ${operation} (${detail})`, operation, status, error);
}
