import { TableClient } from '@azure/data-tables';
import type { DefaultAzureCredential } from '@azure/identity';
import type { Settings } from '../config/settings';
import { ConfigurationError } from '../core/errors';

/** The parked-messages table (the name the Bicep templates create: `parkedMessagesTableName`). */
export const PARKED_MESSAGES_TABLE = 'parkedmessages';

/**
 * A TableClient on the parked-messages table, in the idempotency table's storage account:
 * from `IDEMPOTENCY_TABLE_CONNECTION_STRING` locally (Azurite, plain http allowed), otherwise
 * `IDEMPOTENCY_TABLE_ENDPOINT` with the given managed-identity credential. Sends nothing.
 *
 * Minimal on purpose: a shared builder (`src/storage/tableClient.ts`) is being added on another
 * branch; this one should be replaced by it when both are merged.
 * @throws ConfigurationError when neither setting is present.
 */
export function parkingTableClient(
  settings: Pick<Settings, 'IDEMPOTENCY_TABLE_CONNECTION_STRING' | 'IDEMPOTENCY_TABLE_ENDPOINT'>,
  credential: () => DefaultAzureCredential,
  tableName: string = PARKED_MESSAGES_TABLE,
): TableClient {
  const connectionString = settings.IDEMPOTENCY_TABLE_CONNECTION_STRING;
  if (connectionString) {
    const http = /UseDevelopmentStorage=true/i.test(connectionString) || /TableEndpoint=http:/i.test(connectionString) || /DefaultEndpointsProtocol=http(;|$)/i.test(connectionString);
    return TableClient.fromConnectionString(connectionString, tableName, { allowInsecureConnection: http });
  }
  if (!settings.IDEMPOTENCY_TABLE_ENDPOINT) throw new ConfigurationError('set IDEMPOTENCY_TABLE_ENDPOINT (Azure, managed identity) or IDEMPOTENCY_TABLE_CONNECTION_STRING (local Azurite)');
  return new TableClient(settings.IDEMPOTENCY_TABLE_ENDPOINT, tableName, credential());
}
