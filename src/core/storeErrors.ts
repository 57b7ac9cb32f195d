import { StoreRequestError, StoreUnavailableError } from './errors';

/** The store answers the core decides on; anything else becomes a domain error. */
export type StoreConflict = 'exists' | 'conditionFailed' | 'notFound';

interface SdkErrorShape {
  statusCode?: number;
  code?: string;
  details?: { errorCode?: string; odataError?: { code?: string } };
  message?: string;
}

function errorCodeOf(error: SdkErrorShape): string | undefined {
  return error.details?.errorCode ?? error.details?.odataError?.code ?? error.code;
}

/**
 * Classifies a Table SDK error: the three expected conflicts come back as a `StoreConflict`;
 * everything else is turned into a `StoreUnavailableError` (retryable: network failures,
 * timeouts, 408, 429, 5xx) or a `StoreRequestError` (not retryable: other 4xx) and thrown.
 * No raw SDK error leaves this function.
 */
export function classifyStoreError(error: unknown, operation: string): StoreConflict {
  const e = (error ?? {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const code = errorCodeOf(e);
  if (status === 409 && code !== 'TableBeingDeleted') return 'exists';
  if (status === 412) return 'conditionFailed';
  if (status === 404 && code !== 'TableNotFound') return 'notFound';
  throw toDomainError(error, operation);
}

/** Wraps any store failure in a domain error (see {@link classifyStoreError}). */
export function toDomainError(error: unknown, operation: string): StoreUnavailableError | StoreRequestError {
  if (error instanceof StoreUnavailableError || error instanceof StoreRequestError) return error;
  const e = (error ?? {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const code = errorCodeOf(e);
  const detail = `${status ?? 'no response'}${code ? ` ${code}` : ''}`;
  if (status === undefined || status === 408 || status === 429 || status >= 500) {
    return new StoreUnavailableError(`table store unavailable during ${operation} (${detail}); nothing was decided, retry later`, operation, error);
  }
  return new StoreRequestError(`table store rejected ${operation} (${detail})`, operation, status, error);
}
