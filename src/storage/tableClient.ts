import { TableClient, type TableServiceClientOptions } from '@azure/data-tables';
import { DefaultAzureCredential } from '@azure/identity';
import type { Settings } from '../config/settings';
import { ConfigurationError } from '../core/errors';

/** The settings a table client is built from. */
export type TableClientSettings = Pick<Settings, 'IDEMPOTENCY_TABLE_NAME' | 'IDEMPOTENCY_TABLE_CONNECTION_STRING' | 'IDEMPOTENCY_TABLE_ENDPOINT' | 'AZURE_CLIENT_ID'>;

/**
 * A client of the idempotency table (or of `tableName` in the same account), as every function builds it:
 * - `IDEMPOTENCY_TABLE_CONNECTION_STRING` set (local Azurite): from the connection string, with
 *   `allowInsecureConnection` when its table endpoint is plain http;
 * - otherwise `IDEMPOTENCY_TABLE_ENDPOINT` with a managed identity
 *   (`DefaultAzureCredential`, client id `AZURE_CLIENT_ID` for a user-assigned identity).
 *
 * Creating it sends nothing; the credential is used on the first request.
 * @throws ConfigurationError when neither setting is present.
 */
export function createTableClient(settings: TableClientSettings, options: TableServiceClientOptions = {}, tableName: string = settings.IDEMPOTENCY_TABLE_NAME): TableClient {
  const connectionString = settings.IDEMPOTENCY_TABLE_CONNECTION_STRING;
  if (connectionString) {
    return TableClient.fromConnectionString(connectionString, tableName, {
      ...options,
      allowInsecureConnection: options.allowInsecureConnection ?? usesHttp(connectionString),
    });
  }
  const endpoint = settings.IDEMPOTENCY_TABLE_ENDPOINT;
  if (!endpoint) throw new ConfigurationError('set IDEMPOTENCY_TABLE_ENDPOINT (Azure, managed identity) or IDEMPOTENCY_TABLE_CONNECTION_STRING (local Azurite)');
  const credential = new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID });
  return new TableClient(endpoint, tableName, credential, options);
}

/** True when the connection string reaches the table service over plain http (Azurite). */
function usesHttp(connectionString: string): boolean {
  if (/^\s*UseDevelopmentStorage=true\s*;?\s*$/i.test(connectionString)) return true;
  const endpoint = /(?:^|;)\s*TableEndpoint=([^;]+)/i.exec(connectionString)?.[1];
  if (endpoint) return endpoint.trim().toLowerCase().startsWith('http:');
  return /(?:^|;)\s*DefaultEndpointsProtocol=http\s*(?:;|$)/i.test(connectionString);
}
