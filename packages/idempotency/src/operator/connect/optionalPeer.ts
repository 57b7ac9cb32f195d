import type { TokenCredential } from '@azure/identity';
import { OperatorUsageError } from '../operatorErrors';

/**
 * Loads an optional peer dependency when it is first needed (`load` imports it: an arrow around a dynamic import of its name), so the package never
 * depends on it: a Table user needs no Cosmos SDK, a connection string needs no `@azure/identity`, only a dead-letter
 * replay needs `@azure/service-bus`.
 * @throws OperatorUsageError naming the package and what needs it, when it is not installed; its own load errors otherwise
 */
export async function optionalPeer<T>(load: () => Promise<T>, name: string, purpose: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if ((e.code === 'MODULE_NOT_FOUND' || e.code === 'ERR_MODULE_NOT_FOUND') && (e.message ?? '').includes(name))
      throw new OperatorUsageError(`${purpose} needs the package ${name}, which is not installed: npm install ${name}`);
    throw error;
  }
}

/**
 * `DefaultAzureCredential` from `@azure/identity` (loaded only now): your `az login`, environment or managed identity
 * (`managedIdentityClientId` for a user-assigned one).
 * @throws OperatorUsageError when `@azure/identity` is not installed (use a connection string, or install it)
 */
export async function defaultCredential(purpose: string, managedIdentityClientId?: string): Promise<TokenCredential> {
  const identity = await optionalPeer(() => import('@azure/identity'), '@azure/identity', `${purpose} with an Azure identity (no connection string given)`);
  return new identity.DefaultAzureCredential(managedIdentityClientId ? { managedIdentityClientId } : {});
}
