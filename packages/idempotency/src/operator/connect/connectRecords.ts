import { OperatorUsageError } from '../operatorErrors';
import { cosmosRecords } from '../cosmosRecords';
import type { RecordsBackend } from '../RecordsBackend';
import { tableRecords } from '../tableRecords';
import { defaultCredential, optionalPeer } from './optionalPeer';

/** Where the records are and how to reach them (the CLI's options; `IDEMPOTENCY_*` / `COSMOS_*` as the app's settings). */
export interface StoreConnection {
  readonly store: 'table' | 'cosmos';
  /** Table: a connection string (`UseDevelopmentStorage=true` for Azurite), or an endpoint with your Azure identity. */
  readonly tableConnectionString?: string;
  readonly tableEndpoint?: string;
  readonly tableName: string;
  readonly partitionCount: number;
  /** Cosmos: the account endpoint, with a key (the local emulator only) or your Azure identity. */
  readonly cosmosEndpoint?: string;
  readonly cosmosKey?: string;
  readonly cosmosDatabase?: string;
  readonly cosmosContainer?: string;
  /** A user-assigned managed identity's client id, for `DefaultAzureCredential`. */
  readonly managedIdentityClientId?: string;
  readonly callTimeoutMs: number;
}

/** A connected backend, what it is connected to (no secret in it) and how to let it go. */
export interface ConnectedRecords {
  readonly backend: RecordsBackend;
  readonly target: string;
  /**
   * Set when no setting named the store and the console assumed one (Azurite's default, `UseDevelopmentStorage=true`):
   * the settings it looked for, for the message when nothing answers there.
   */
  readonly assumed?: string;
  close(): void;
}

/** The settings that name a Table store, any one of which would have been used instead of Azurite's default. */
export const TABLE_CONNECTION_SETTINGS =
  'IDEMPOTENCY_TABLE_CONNECTION_STRING (--table-connection-string) or IDEMPOTENCY_TABLE_ENDPOINT (--table-endpoint, with your Azure identity)';

/**
 * Connects to the records of `connection`, loading only the SDKs it needs (`@azure/data-tables` or `@azure/cosmos`,
 * and `@azure/identity` only without a connection string or key). Makes no request.
 * @throws OperatorUsageError when a setting is missing or a needed package is not installed
 */
export async function connectRecords(connection: StoreConnection): Promise<ConnectedRecords> {
  return connection.store === 'cosmos' ? connectCosmos(connection) : connectTable(connection);
}

async function connectTable(connection: StoreConnection): Promise<ConnectedRecords> {
  const { TableClient } = await optionalPeer(() => import('@azure/data-tables'), '@azure/data-tables', 'the Table store');
  const { tableConnectionString: connectionString, tableEndpoint: endpoint, tableName } = connection;
  const options = { callTimeoutMs: connection.callTimeoutMs, partitionCount: connection.partitionCount };
  if (endpoint && !connectionString) {
    const credential = await defaultCredential('the Table store', connection.managedIdentityClientId);
    const client = new TableClient(endpoint, tableName, credential);
    return { backend: tableRecords(client, options), target: `table ${tableName} at ${endpoint}`, close: () => undefined };
  }
  const text = connectionString ?? 'UseDevelopmentStorage=true';
  const client = TableClient.fromConnectionString(text, tableName, { allowInsecureConnection: isLocalHttp(text) });
  const target = `table ${tableName} at ${client.url}`;
  return {
    backend: tableRecords(client, options),
    target,
    ...(connectionString === undefined ? { assumed: `none of ${TABLE_CONNECTION_SETTINGS} is set` } : {}),
    close: () => undefined,
  };
}

async function connectCosmos(connection: StoreConnection): Promise<ConnectedRecords> {
  const { cosmosEndpoint: endpoint, cosmosDatabase: database, cosmosContainer: container } = connection;
  if (!endpoint || !database || !container)
    throw new OperatorUsageError(
      'the Cosmos store needs --cosmos-endpoint, --cosmos-database and --cosmos-container (or COSMOS_ENDPOINT, COSMOS_DATABASE_NAME, COSMOS_IDEMPOTENCY_CONTAINER)',
    );
  const { CosmosClient } = await optionalPeer(() => import('@azure/cosmos'), '@azure/cosmos', 'the Cosmos store');
  const local = isLocalHttp(endpoint);
  const auth = connection.cosmosKey
    ? { key: connection.cosmosKey }
    : { aadCredentials: await defaultCredential('the Cosmos store', connection.managedIdentityClientId) };
  const client = new CosmosClient({ endpoint, ...auth, connectionPolicy: local ? { enableEndpointDiscovery: false } : undefined });
  return {
    backend: cosmosRecords(client.database(database).container(container), { callTimeoutMs: connection.callTimeoutMs }),
    target: `cosmos container ${database}/${container} at ${endpoint}`,
    close: () => client.dispose(),
  };
}

/** True for Azurite's development storage, or an `http://` endpoint on this machine (an emulator: no TLS there). */
export function isLocalHttp(text: string): boolean {
  return /UseDevelopmentStorage=true/i.test(text) || /http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/i.test(text);
}
