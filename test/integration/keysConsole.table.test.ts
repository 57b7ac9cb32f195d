import { createHttpHeaders } from '@azure/core-rest-pipeline';
import { ExitCode, listRecords, tableRecords } from 'azure-functions-idempotency/operator';
import { useAzurite } from '../support/azurite';
import { digestOf, tableRig } from '../support/keysConsole';
import { describeKeysConsole } from '../support/keysConsoleScenarios';

// The operator's console (issue 53) on the Table store: Azurite, started for this file on a free port. Every command
// through the CLI in this process (runOperatorCli) and the library functions; the scenarios are the Cosmos file's too.
const azuriteOf = useAzurite();

describe('keys console on Table Storage (Azurite)', () => {
  describeKeysConsole(() => tableRig(azuriteOf()));
});

describe('keys console on Table Storage: what only Azure does, and a refused identity', () => {
  test('list: a page of no rows with a continuation (as Azure answers a filtered scan that hit its limit) is followed, through the SDK', async () => {
    const rig = await tableRig(azuriteOf());
    for (let i = 0; i < 20; i++) await rig.store.commit({ consumer: 'pages', key: `k${i}` }, digestOf(`k${i}`), null);
    // Each query that continues a partition first gets an empty page carrying its own continuation back (headers as
    // the service sends them); the next request asks again and gets Azurite's rows. Azurite itself never does this.
    let empty = 0;
    const answered = new Set<string>();
    rig.client.pipeline.addPolicy(
      {
        name: 'azureEmptyPages',
        sendRequest: async (request, next) => {
          // The raw query values (URLSearchParams would read a `+` of Azurite's base64 tokens as a space).
          const param = (name: string) => {
            const raw = new RegExp(`[?&]${name}=([^&]*)`).exec(request.url)?.[1];
            return raw === undefined ? undefined : decodeURIComponent(raw);
          };
          const partition = param('NextPartitionKey');
          const rowKey = param('NextRowKey');
          const at = `${partition}/${rowKey}`;
          if (request.method !== 'GET' || !partition || answered.has(at)) return next(request);
          answered.add(at);
          empty++;
          const headers = createHttpHeaders({ 'content-type': 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8' });
          headers.set('x-ms-continuation-NextPartitionKey', partition);
          if (rowKey) headers.set('x-ms-continuation-NextRowKey', rowKey);
          return { request, status: 200, headers, bodyAsText: '{"value":[]}' };
        },
        // Next to the wire (after signing): the answer goes back through the SDK's deserializer, as the service's does.
      },
      { afterPhase: 'Sign' },
    );
    const listing = await listRecords(tableRecords(rig.client), { consumer: 'pages', pageSize: 1, maxPages: 500, clock: rig.clock });
    expect(empty).toBeGreaterThan(3);
    expect(listing.views.map((view) => view.key).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
    expect([listing.stoppedBy, listing.pages]).toEqual([undefined, expect.any(Number)]);
    expect(listing.pages).toBeGreaterThanOrEqual(20 + empty);
  });

  test('a 403 from the store (an identity without its role: here a wrong account key) exits 5 naming the role', async () => {
    const rig = await tableRig(azuriteOf());
    const wrongKey = azuriteOf().connectionString.replace(/AccountKey=[^;]+/, `AccountKey=${Buffer.from('not the key').toString('base64')}`);
    const result = await rig.run(['keys', 'show', 'payments', 'k1', '--table-connection-string', wrongKey]);
    expect(result.code).toBe(ExitCode.Permission);
    expect(result.err.join('\n')).toMatch(
      /refused keys\.read \(403\): your identity needs the role "Storage Table Data Reader" \(or "Storage Table Data Contributor"\)/,
    );
  });
});
