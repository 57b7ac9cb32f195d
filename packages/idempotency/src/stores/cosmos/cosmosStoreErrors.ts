import type { StoreCallKind } from '../../protocol/deadline';
import { StoreRequestError, StoreUnavailableError } from '../../protocol/errors';
import { conflictOfStatus, type StoreConflict } from '../../protocol/storeConflict';

interface CosmosErrorShape {
  code?: number | string;
  statusCode?: number;
  substatus?: number;
  message?: string;
}

/** The HTTP status of a Cosmos SDK error (`ErrorResponse.code` is a number), if it has one. */
export function cosmosErrorStatus(error: unknown): number | undefined {
  const e = (error ?? {}) as CosmosErrorShape;
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** Network errors raised before a request left this process: nothing reached the service. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const NOT_SENT_IN_MESSAGE = /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)\b/;

/**
 * Classifies a Cosmos SDK error of the idempotency store: 409 (create found the item), 412 (If-Match
 * lost) and 404 come back as a {@link StoreConflict}; everything else is thrown as a domain error
 * ({@link cosmosStoreError}). No raw SDK error leaves this function.
 * @throws StoreUnavailableError | StoreRequestError
 */
export function classifyCosmosStoreError(error: unknown, operation: string, kind: StoreCallKind): StoreConflict {
  const conflict = conflictOfStatus(cosmosErrorStatus(error));
  if (conflict) return conflict;
  throw cosmosStoreError(error, operation, kind);
}

/**
 * Wraps a Cosmos failure in a domain error that tells what may have been decided, as the Table store's
 * errors do: no answer, 408, 410, 449 and 5xx are `StoreUnavailableError` (retryable) and a write among
 * them may have landed (`writeMayHaveLanded`), except 429 and 503 (refused: nothing done) and a
 * connection that was never made; other statuses are `StoreRequestError` (400 bad request, 401/403 the
 * identity lacks its data-plane role, 413 too large...).
 */
export function cosmosStoreError(
  error: unknown,
  operation: string,
  kind: StoreCallKind,
  status = cosmosErrorStatus(error),
): StoreUnavailableError | StoreRequestError {
  if (error instanceof StoreUnavailableError || error instanceof StoreRequestError) return error;
  const e = (error ?? {}) as CosmosErrorShape;
  const detail = `${status ?? 'no response'}${e.substatus ? `/${e.substatus}` : ''}`;
  if (status === undefined || status === 408 || status === 410 || status === 429 || status === 449 || status >= 500) {
    // The SDK rethrows a failed batch request as a plain Error whose message keeps the network error's (`connect ECONNREFUSED ...`).
    const code = typeof e.code === 'string' ? e.code : NOT_SENT_IN_MESSAGE.exec(e.message ?? '')?.[1];
    const refused = status === 429 || status === 503 || (status === undefined && code !== undefined && NOT_SENT.has(code));
    const mayHaveLanded = kind === 'write' && !refused;
    const decided = mayHaveLanded ? 'the write may have landed (a key may stay claimed until its lease lapses); a retry finds out' : 'nothing was decided';
    return new StoreUnavailableError(`cosmos store unavailable during ${operation} (${detail}); ${decided}; retry later`, operation, error, mayHaveLanded);
  }
  return new StoreRequestError(`cosmos store rejected ${operation} (${detail}${e.message ? `: ${e.message.slice(0, 200)}` : ''})`, operation, status, error);
}
