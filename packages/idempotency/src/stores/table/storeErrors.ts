import type { StoreCallKind } from '../../protocol/deadline';
import { StoreRequestError, StoreUnavailableError } from '../../protocol/errors';
import { conflictOfStatus, type StoreConflict } from '../../protocol/storeConflict';

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
 * No raw SDK error leaves this function. The store classifies its own calls with it; classify your own Table
 * calls beside the store (your rows, side tables) with it too, and they fail as the store's do.
 */
export function classifyStoreError(error: unknown, operation: string, kind?: StoreCallKind): StoreConflict {
  const e = (error ?? {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const code = errorCodeOf(e);
  const conflict = conflictOfStatus(status);
  // A table being deleted (409) or missing (404) is a failure, not an answer about an entity.
  const aboutTable = (conflict === 'exists' && code === 'TableBeingDeleted') || (conflict === 'notFound' && code === 'TableNotFound');
  if (conflict && !aboutTable) return conflict;
  throw toDomainError(error, operation, kind);
}

/** The SDK's own refusal to send over http without `allowInsecureConnection` (no request left the process). */
const INSECURE_REFUSED = /allowInsecureConnection is false/;

/** Network errors raised before a request left this process: nothing reached the service. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Wraps any store failure in a domain error (see {@link classifyStoreError}). What it says was
 * decided is true for the call's `kind`: a read decides nothing; a write the service refused (429,
 * 503) or that never left (connection refused) decided nothing; a write that lost its answer (a
 * reset, a timeout, a 500) may have landed, and `writeMayHaveLanded` says so. Without `kind` the
 * message says both.
 */
export function toDomainError(error: unknown, operation: string, kind?: StoreCallKind): StoreUnavailableError | StoreRequestError {
  if (error instanceof StoreUnavailableError || error instanceof StoreRequestError) return error;
  const e = (error ?? {}) as SdkErrorShape;
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const code = errorCodeOf(e);
  if (status === undefined && typeof e.message === 'string' && INSECURE_REFUSED.test(e.message)) {
    return new StoreRequestError(
      `table store request ${operation} refused by the TableClient itself: its endpoint is http:// and the client was created without ` +
        '{ allowInsecureConnection: true }; nothing was sent. Pass that option for a local emulator (Azurite) only, use https:// in Azure ' +
        `(SDK: ${e.message})`,
      operation,
      undefined,
      error,
    );
  }
  const detail = `${status ?? 'no response'}${code ? ` ${code}` : ''}`;
  if (status === undefined || status === 408 || status === 429 || status >= 500) {
    const refused = status === 429 || status === 503 || (status === undefined && code !== undefined && NOT_SENT.has(code));
    const mayHaveLanded = kind === 'write' && !refused;
    const decided =
      kind === 'read' || refused
        ? 'nothing was decided'
        : kind === 'write'
          ? 'the write may have landed (a key may stay claimed until its lease lapses); a retry finds out'
          : 'a read decided nothing, a write may have landed';
    return new StoreUnavailableError(`table store unavailable during ${operation} (${detail}); ${decided}; retry later`, operation, error, mayHaveLanded);
  }
  return new StoreRequestError(`table store rejected ${operation} (${detail})`, operation, status, error);
}
