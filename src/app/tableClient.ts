import { TableClient, type TableServiceClientOptions } from '@azure/data-tables';
import { DefaultAzureCredential } from '@azure/identity';
import type { Settings } from '../config/settings';
import { DEFAULT_STORE_TIMEOUT_MS, ConfigurationError } from 'azure-functions-idempotency';

/** The settings a table client is built from. */
export type TableClientSettings = Pick<
  Settings,
  'IDEMPOTENCY_TABLE_NAME' | 'IDEMPOTENCY_TABLE_CONNECTION_STRING' | 'IDEMPOTENCY_TABLE_ENDPOINT' | 'AZURE_CLIENT_ID'
> &
  Partial<Pick<Settings, 'IDEMPOTENCY_STORE_TIMEOUT_MS'>>;

/**
 * A client of the idempotency table (or of `tableName` in the same account), as every function builds it:
 * - `IDEMPOTENCY_TABLE_CONNECTION_STRING` set (local Azurite): from the connection string, with
 *   `allowInsecureConnection` when its table endpoint is plain http;
 * - otherwise `IDEMPOTENCY_TABLE_ENDPOINT` with a managed identity
 *   (`DefaultAzureCredential`, client id `AZURE_CLIENT_ID` for a user-assigned identity).
 *
 * Every request it sends times out after `IDEMPOTENCY_STORE_TIMEOUT_MS` (per try; the SDK's retries
 * are bounded), so no caller (the sweep, its checkpoint, parking) waits on a store that never answers;
 * the idempotency store adds its own deadline over the whole call (src/core/deadline.ts).
 *
 * Creating it sends nothing; the credential is used on the first request.
 * @throws ConfigurationError when neither setting is present.
 */
export function createTableClient(
  settings: TableClientSettings,
  options: TableServiceClientOptions = {},
  tableName: string = settings.IDEMPOTENCY_TABLE_NAME,
): TableClient {
  const client = buildClient(settings, options, tableName);
  withRequestTimeout(client, settings.IDEMPOTENCY_STORE_TIMEOUT_MS ?? DEFAULT_STORE_TIMEOUT_MS);
  return client;
}

function buildClient(settings: TableClientSettings, options: TableServiceClientOptions, tableName: string): TableClient {
  const connectionString = settings.IDEMPOTENCY_TABLE_CONNECTION_STRING;
  if (connectionString) {
    return TableClient.fromConnectionString(connectionString, tableName, {
      ...options,
      allowInsecureConnection: options.allowInsecureConnection ?? usesHttp(connectionString),
    });
  }
  const endpoint = settings.IDEMPOTENCY_TABLE_ENDPOINT;
  if (!endpoint)
    throw new ConfigurationError('set IDEMPOTENCY_TABLE_ENDPOINT (Azure, managed identity) or IDEMPOTENCY_TABLE_CONNECTION_STRING (local Azurite)');
  const credential = new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID });
  return new TableClient(endpoint, tableName, credential, options);
}

/** Gives every request of `client` a timeout of `timeoutMs` (per try) unless the caller set one. */
export function withRequestTimeout(client: TableClient, timeoutMs: number): TableClient {
  client.pipeline.addPolicy({
    name: 'idempotentConsumerRequestTimeout',
    sendRequest: (request, next) => {
      if (!request.timeout) request.timeout = timeoutMs;
      return next(request);
    },
  });
  return client;
}

/** True when the connection string reaches the table service over plain http (Azurite). */
function usesHttp(connectionString: string): boolean {
  if (/^\s*UseDevelopmentStorage=true\s*;?\s*$/i.test(connectionString)) return true;
  const endpoint = /(?:^|;)\s*TableEndpoint=([^;]+)/i.exec(connectionString)?.[1];
  if (endpoint) return endpoint.trim().toLowerCase().startsWith('http:');
  return /(?:^|;)\s*DefaultEndpointsProtocol=http\s*(?:;|$)/i.test(connectionString);
}
