import { TableClient } from '@azure/data-tables';
import { DefaultAzureCredential } from '@azure/identity';
import { ConfigurationError } from '../core/errors';
import type { Settings } from '../config/settings';

/**
 * A TableClient for `tableName` from the settings: a connection string locally (Azurite; plain
 * HTTP is allowed only for loopback endpoints), else the account's table endpoint with the
 * user-assigned managed identity (`AZURE_CLIENT_ID`) in Azure.
 */
export function tableClientFromSettings(settings: Settings, tableName: string): TableClient {
  if (settings.IDEMPOTENCY_TABLE_CONNECTION_STRING) {
    const connectionString = settings.IDEMPOTENCY_TABLE_CONNECTION_STRING;
    const insecure = /TableEndpoint=http:\/\/(127\.0\.0\.1|localhost)[:/]/i.test(connectionString) || /UseDevelopmentStorage=true/i.test(connectionString);
    return TableClient.fromConnectionString(connectionString, tableName, { allowInsecureConnection: insecure });
  }
  if (!settings.IDEMPOTENCY_TABLE_ENDPOINT) {
    throw new ConfigurationError('set IDEMPOTENCY_TABLE_ENDPOINT (Azure, managed identity) or IDEMPOTENCY_TABLE_CONNECTION_STRING (local Azurite)');
  }
  const credential = new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID });
  return new TableClient(settings.IDEMPOTENCY_TABLE_ENDPOINT, tableName, credential);
}
