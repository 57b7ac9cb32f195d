import { createHash } from 'node:crypto';
import type { ApiRequest } from './httpTypes';

/**
 * How the caller of an HTTP function is identified, which scopes its idempotency keys:
 * - `functionKey` (default; the functions' `authLevel` is `function`): the function key the caller
 *   presented (`x-functions-key` header or `code` query parameter), which the host has already checked.
 *   The Node v4 programming model does not surface the host's key-id claim (the key's *name*), so the
 *   caller is the SHA-256 of the key itself (never the key): one caller per key; a rotated key is a new
 *   caller (its keys start afresh).
 * - `easyAuth` (App Service authentication / Microsoft Entra ID in front of the app): the principal in
 *   `x-ms-client-principal` (identity provider + user id, or the `-id`/`-idp` headers). Only trust these
 *   headers when EasyAuth runs: it removes them from incoming requests and sets them itself. Without
 *   EasyAuth a client could forge them, so the `functionKey` mode never reads them.
 */
export const CallerIdentityMode = {
  FunctionKey: 'functionKey',
  EasyAuth: 'easyAuth',
} as const;
export type CallerIdentityMode = (typeof CallerIdentityMode)[keyof typeof CallerIdentityMode];

/**
 * The caller of `request`, as an opaque string (`key:<sha256 hex, 32 chars>` or `entra:<idp>:<id>`),
 * or `undefined` when the request carries no identity of that mode (answer 401).
 */
export function callerOf(request: ApiRequest, mode: CallerIdentityMode): string | undefined {
  if (mode === CallerIdentityMode.EasyAuth) return principalOf(request);
  const key = request.headers.get('x-functions-key') ?? new URL(request.url, 'http://localhost').searchParams.get('code');
  if (!key) return undefined;
  return `key:${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32)}`;
}

function principalOf(request: ApiRequest): string | undefined {
  const encoded = request.headers.get('x-ms-client-principal');
  if (encoded) {
    try {
      const principal = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as Record<string, unknown>;
      const idp = principal.identityProvider ?? principal.auth_typ;
      const id = principal.userId ?? oid(principal.claims);
      if (typeof idp === 'string' && typeof id === 'string' && id !== '') return `entra:${idp}:${id}`;
    } catch {
      return undefined;
    }
  }
  const id = request.headers.get('x-ms-client-principal-id');
  const idp = request.headers.get('x-ms-client-principal-idp');
  return id && idp ? `entra:${idp}:${id}` : undefined;
}

/** The object id claim of an App Service principal's claim list (`{ typ, val }` items). */
function oid(claims: unknown): string | undefined {
  if (!Array.isArray(claims)) return undefined;
  for (const claim of claims as Array<Record<string, unknown>>) {
    if (claim?.typ === 'http://schemas.microsoft.com/identity/claims/objectidentifier' || claim?.typ === 'oid') {
      return typeof claim.val === 'string' ? claim.val : undefined;
    }
  }
  return undefined;
}
