import { CosmosClient, type Container } from '@azure/cosmos';
import { DefaultAzureCredential } from '@azure/identity';
import type { Settings } from '../config/settings';
import { ConfigurationError } from 'azure-functions-idempotency';

/**
 * The Cosmos DB container of the idempotency records (`IDEMPOTENCY_STORE=cosmos`): `COSMOS_IDEMPOTENCY_CONTAINER`
 * in `COSMOS_DATABASE_NAME` at `COSMOS_ENDPOINT`, with Microsoft Entra ID (`DefaultAzureCredential`, user-assigned
 * identity `AZURE_CLIENT_ID`, which holds Cosmos DB Built-in Data Contributor on the account; local auth is off),
 * or with `COSMOS_KEY` (the local emulator only; never deployed). Sends nothing: the client connects on first use.
 * @throws ConfigurationError when `COSMOS_ENDPOINT` is not set.
 */
export function cosmosIdempotencyContainer(settings: Settings): Container {
  const endpoint = settings.COSMOS_ENDPOINT;
  if (!endpoint) throw new ConfigurationError('COSMOS_ENDPOINT: required when IDEMPOTENCY_STORE=cosmos');
  const client = settings.COSMOS_KEY
    ? new CosmosClient({ endpoint, key: settings.COSMOS_KEY })
    : new CosmosClient({ endpoint, aadCredentials: new DefaultAzureCredential({ managedIdentityClientId: settings.AZURE_CLIENT_ID }) });
  return client.database(settings.COSMOS_DATABASE_NAME).container(settings.COSMOS_IDEMPOTENCY_CONTAINER);
}
