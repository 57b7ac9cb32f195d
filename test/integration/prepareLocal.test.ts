import { TableServiceClient } from '@azure/data-tables';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareLocalEmulators } from '../../tools/setup/prepareLocal';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';

/**
 * `npm run local:prepare` against a real Azurite and the Cosmos emulator: from the example settings (with the
 * emulators' addresses), the tables and the orders container exist afterwards, a second run changes nothing,
 * and a bad setting is refused, named, before anything is created.
 */
const azurite = useAzurite();
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos.stop();
});

const example = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'local.settings.json.example'), 'utf8')) as { Values: Record<string, string> }).Values;
const tablesOf = async () => {
  const names: string[] = [];
  for await (const t of TableServiceClient.fromConnectionString(azurite().connectionString, { allowInsecureConnection: true }).listTables())
    names.push(t.name!);
  return names;
};

test('local:prepare: creates the four tables and the orders database and container; running it again is harmless', async () => {
  const values = {
    ...example,
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azurite().connectionString,
    IDEMPOTENCY_TABLE_NAME: 'prepidem',
    PARKED_TABLE_NAME: 'prepparked',
    PAYMENT_STATE_TABLE_NAME: 'prepstate',
    REWARDS_TABLE_NAME: 'preprewards',
    COSMOS_ENDPOINT: cosmos.endpoint,
    COSMOS_KEY: Buffer.from('emulator').toString('base64'),
    COSMOS_DATABASE_NAME: 'prepshop',
    COSMOS_ORDERS_CONTAINER: 'preporders',
  };
  const lines: string[] = [];
  for (let run = 0; run < 2; run++) await prepareLocalEmulators(values, (line) => lines.push(line));
  expect(await tablesOf()).toEqual(expect.arrayContaining(['prepidem', 'prepparked', 'prepstate', 'preprewards']));
  const { resource } = await cosmos.client().database('prepshop').container('preporders').read();
  expect(resource?.partitionKey?.paths).toEqual(['/orderId']);
  expect(lines.filter((l) => l.endsWith(': ready'))).toHaveLength(10);
});

test('local:prepare: the example placeholder key or a non-local Cosmos endpoint is refused, naming the setting, before any table is created', async () => {
  const base = { ...example, IDEMPOTENCY_TABLE_CONNECTION_STRING: azurite().connectionString, IDEMPOTENCY_TABLE_NAME: 'neveridem' };
  await expect(prepareLocalEmulators({ ...base, COSMOS_ENDPOINT: cosmos.endpoint })).rejects.toThrow(/COSMOS_KEY/);
  await expect(prepareLocalEmulators({ ...base, COSMOS_ENDPOINT: 'https://prod.documents.azure.com:443/', COSMOS_KEY: 'k' })).rejects.toThrow(
    /COSMOS_ENDPOINT/,
  );
  expect(await tablesOf()).not.toContain('neveridem');
});
