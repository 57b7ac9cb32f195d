import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExitCode } from 'azure-functions-idempotency/operator';
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

describe('keys console on Cosmos DB: a refused identity', () => {
  test('a 403 from the store (no data-plane role) exits 5 naming "Cosmos DB Built-in Data Contributor"', async () => {
    const rig = await cosmosRig(cosmos);
    // A loopback endpoint that refuses every request as Cosmos refuses an identity without a data-plane role assignment.
    const refusing = createServer((_request, response) => {
      response.writeHead(403, { 'content-type': 'application/json', 'x-ms-substatus': '5301' });
      response.end(JSON.stringify({ code: 'Forbidden', message: 'Request blocked by Auth: principal does not have required RBAC permissions' }));
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`;
      const result = await rig.run(['keys', 'release', 'payments', 'k1', '--reason', 'x', '--cosmos-endpoint', endpoint]);
      expect(result.code).toBe(ExitCode.Permission);
      expect(result.err.join('\n')).toMatch(
        /the cosmos store refused keys\.read \(403\): your identity needs the role "Cosmos DB Built-in Data Reader" \(or "Cosmos DB Built-in Data Contributor"\)/,
      );
    } finally {
      refusing.closeAllConnections();
      await new Promise((resolve) => refusing.close(resolve));
    }
  });
});
