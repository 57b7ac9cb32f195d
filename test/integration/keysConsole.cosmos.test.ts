import { CosmosEmulator } from '../support/cosmos';
import { cosmosRig } from '../support/keysConsole';
import { describeKeysConsole } from '../support/keysConsoleScenarios';

// The operator's console (issue 53) on the Cosmos store: the stand-in @vercel/cosmosdb-server in this process. Its gaps
// do not reach these scenarios: no TTL is asserted (a release rewrites `ttl` to the same end: not enforced here), and an
// eviction's batch puts the marker's conditional delete first, so a refused one deletes nothing on either (on the
// stand-in a batch failing on a later operation would keep the earlier deletes; the service rolls it back).
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

describe('keys console on Cosmos DB (stand-in)', () => {
  describeKeysConsole(() => cosmosRig(cosmos));
});
