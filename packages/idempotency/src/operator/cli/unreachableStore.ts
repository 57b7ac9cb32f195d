import { StoreUnavailableError } from '../../protocol/errors';
import type { ConnectedRecords } from '../connect/connectRecords';
import { OperatorUsageError } from '../operatorErrors';

/**
 * A store that did not answer, told with what the console tried. When no setting named the store (the console
 * assumed Azurite's default), it is a misconfiguration, not an outage: an {@link OperatorUsageError} (exit 2) that
 * names the endpoint tried and the settings to set, and never says "retry later". With a store the settings named,
 * the store's own error, with the endpoint it was sent to. Any other error is returned as it is.
 *
 * @example
 * ```text
 * error: no store is configured: none of IDEMPOTENCY_TABLE_CONNECTION_STRING (--table-connection-string) or ... is set,
 * so the console tried Azurite's default (table idempotency at http://127.0.0.1:10002/devstoreaccount1/idempotency)
 * and nothing answered there (...). Set one of them to your store ...
 * ```
 */
export function explainUnreachable(error: unknown, connected: Pick<ConnectedRecords, 'target' | 'assumed'> | undefined): unknown {
  if (!(error instanceof StoreUnavailableError) || !connected) return error;
  const what = error.message.replace(/;\s*retry later\s*$/i, '');
  if (connected.assumed !== undefined) {
    return new OperatorUsageError(
      `no store is configured: ${connected.assumed}, so the console tried Azurite's default (${connected.target}) and nothing answered ` +
        `there (${what}). Set one of them to the store your app uses (the Cosmos store: IDEMPOTENCY_STORE=cosmos with COSMOS_ENDPOINT, ` +
        'COSMOS_DATABASE_NAME, COSMOS_IDEMPOTENCY_CONTAINER), or start Azurite for a local store',
      { cause: error },
    );
  }
  return new StoreUnavailableError(`${error.message} (tried ${connected.target})`, error.operation, error, error.writeMayHaveLanded);
}
