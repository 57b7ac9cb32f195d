import { StoreRequestError } from 'azure-functions-idempotency';

/** A table the consumer cannot use as deployed: which one, and what the service answered. */
export interface StoreMisconfiguration {
  /** The table the refused request named (`unknown` when the answer does not say). */
  readonly table: string;
  readonly status: number;
  /** The service's error code (`AuthorizationPermissionMismatch`, `TableNotFound`, `TableBeingDeleted`...), or ''. */
  readonly code: string;
  readonly operation: string;
}

interface SdkErrorShape {
  statusCode?: number;
  code?: string;
  details?: { errorCode?: string; odataError?: { code?: string } };
  request?: { url?: string; body?: unknown };
}

/**
 * Whether a store failure says the table itself cannot be used: 401 or 403 (a role assignment not yet propagated, a
 * firewall, a revoked identity), 404 `TableNotFound` (never created, or deleted), 409 `TableBeingDeleted`. No event
 * is at fault and no retry of an event fixes it, so it must not count as a strike and nothing may be parked for it
 * (parking would drain the stream: every event set aside, then checkpointed past). 404 `ResourceNotFound` and 409
 * `EntityAlreadyExists` are answers about a row, never this.
 * @returns the table, status and code, or `undefined` when the failure is something else.
 */
export function misconfigurationOf(error: unknown): StoreMisconfiguration | undefined {
  if (!(error instanceof StoreRequestError)) return undefined;
  const cause = (error.cause ?? {}) as SdkErrorShape;
  const status = error.statusCode ?? cause.statusCode;
  const code = cause.details?.errorCode ?? cause.details?.odataError?.code ?? cause.code ?? '';
  const misconfigured = status === 401 || status === 403 || (status === 404 && code === 'TableNotFound') || (status === 409 && code === 'TableBeingDeleted');
  if (!misconfigured || status === undefined) return undefined;
  return { table: tableOf(cause.request), status, code, operation: error.operation };
}

/** The table a request names: the last path segment (`/<table>(PartitionKey=..)`), or for a `$batch` its first inner request's. */
function tableOf(request: SdkErrorShape['request']): string {
  const url = request?.url;
  if (typeof url !== 'string') return 'unknown';
  const last = decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? '');
  if (last !== '$batch') return /^[A-Za-z][A-Za-z0-9]*/.exec(last)?.[0] ?? 'unknown';
  const body = typeof request?.body === 'string' ? request.body : '';
  return /^(?:POST|PUT|MERGE|PATCH|DELETE|GET) https?:\/\/[^\s]*\/([A-Za-z][A-Za-z0-9]*)(?:\(|\s|\?)/m.exec(body)?.[1] ?? 'unknown';
}
