import { CosmosClient } from '@azure/cosmos';
import { Agent } from 'node:https';
import { loadSettings, type Settings } from '../../src/config/settings';
import { createTableClient } from '../../src/app/tableClient';
import { ensureOrdersContainer } from '../../src/orders/OrdersStore';

/**
 * What `func start` needs from the local emulators before the first message, created from the app's own settings
 * (`local.settings.json` Values): the app's four tables in Azurite and the orders container on the Cosmos DB emulator,
 * as infra/ deploys them. Idempotent; every setting is checked before anything is created. Not here: the Service Bus
 * emulator's queues (its own Config.json, docs/deploy.md) and the Durable task hub (the host creates it).
 */
export interface PreparedLocal {
  readonly tables: readonly string[];
  readonly cosmos: { readonly endpoint: string; readonly database: string; readonly container: string } | undefined;
}

/** @throws ConfigurationError (a setting, named) before anything is created; the emulators' own errors after. */
export async function prepareLocalEmulators(
  values: Readonly<Record<string, string | undefined>>,
  log: (line: string) => void = () => undefined,
): Promise<PreparedLocal> {
  const settings = checkedSettings(values);
  const tables = [settings.IDEMPOTENCY_TABLE_NAME, settings.PARKED_TABLE_NAME, settings.PAYMENT_STATE_TABLE_NAME, settings.REWARDS_TABLE_NAME];
  for (const table of tables) {
    await createTableClient(settings, {}, table).createTable();
    log(`table ${table}: ready`);
  }
  if (!settings.COSMOS_ENDPOINT) {
    log('COSMOS_ENDPOINT is not set: no Cosmos container (the orders consumer will not start)');
    return { tables, cosmos: undefined };
  }
  const client = new CosmosClient({
    endpoint: settings.COSMOS_ENDPOINT,
    key: settings.COSMOS_KEY!,
    connectionPolicy: { enableEndpointDiscovery: false },
    // The Cosmos DB emulator serves a self-signed certificate; trusted only on loopback.
    ...(settings.COSMOS_ENDPOINT.startsWith('https:') ? { agent: new Agent({ rejectUnauthorized: false }) } : {}),
  });
  try {
    await ensureOrdersContainer(client, settings.COSMOS_DATABASE_NAME, settings.COSMOS_ORDERS_CONTAINER);
  } finally {
    client.dispose();
  }
  log(`cosmos ${settings.COSMOS_DATABASE_NAME}/${settings.COSMOS_ORDERS_CONTAINER} on ${settings.COSMOS_ENDPOINT}: ready`);
  return { tables, cosmos: { endpoint: settings.COSMOS_ENDPOINT, database: settings.COSMOS_DATABASE_NAME, container: settings.COSMOS_ORDERS_CONTAINER } };
}

type LocalSettings = Settings & { IDEMPOTENCY_TABLE_CONNECTION_STRING: string };

function checkedSettings(values: Readonly<Record<string, string | undefined>>): LocalSettings {
  const settings = loadSettings(values);
  const problems: string[] = [];
  if (!settings.IDEMPOTENCY_TABLE_CONNECTION_STRING)
    problems.push('IDEMPOTENCY_TABLE_CONNECTION_STRING: set it to the Azurite connection string (UseDevelopmentStorage=true)');
  if (settings.COSMOS_ENDPOINT) {
    const host = new URL(settings.COSMOS_ENDPOINT).hostname;
    if (!['localhost', '127.0.0.1', '[::1]'].includes(host))
      problems.push(`COSMOS_ENDPOINT: ${host} is not a local emulator (this command prepares loopback emulators only)`);
    if (!settings.COSMOS_KEY || settings.COSMOS_KEY.startsWith('<')) problems.push("COSMOS_KEY: set it to the Cosmos DB emulator's key (docs/deploy.md)");
  }
  if (problems.length > 0) throw new Error(`local settings: ${problems.join('; ')}`);
  return settings as LocalSettings;
}
