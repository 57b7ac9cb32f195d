import { createServer, type Server, type Socket } from 'node:net';
import { createHttpHeaders } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import { connectRecords, ExitCode, runOperatorCli, tableRecords, type OperatorCliIo, type StoreConnection } from 'azure-functions-idempotency/operator';
import { freePort, useAzurite } from '../support/azurite';
import { digestOf, tableRig } from '../support/keysConsole';

// The console's faults of issue 63, on Azurite (started for this file on a free port): a bound that every request
// counts against, and a store nobody configured named as such (what was tried, what to set), never "retry later".
const azuriteOf = useAzurite();

/** Answers every query of `client` with a page of no rows and a continuation, as Azure may (Azurite never does); counts them. */
function emptyPagesForever(client: TableClient): { readonly requests: () => number } {
  let requests = 0;
  client.pipeline.addPolicy(
    {
      name: 'azureEmptyPagesForever',
      sendRequest: async (request, next) => {
        if (request.method !== 'GET') return next(request);
        requests++;
        const headers = createHttpHeaders({ 'content-type': 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8' });
        headers.set('x-ms-continuation-NextPartitionKey', `p${requests}`);
        headers.set('x-ms-continuation-NextRowKey', `r${requests}`);
        return { request, status: 200, headers, bodyAsText: '{"value":[]}' };
      },
    },
    { afterPhase: 'Sign' },
  );
  return { requests: () => requests };
}

describe('keys list --max-pages bounds every request the command makes', () => {
  test.each([
    ['unfiltered', [] as string[]],
    ['filtered by status', ['--status', 'completed']],
  ])(
    '%s: every page empty with a continuation (Azure): at most --max-pages requests, the consumer look-up included; the cursor to go on',
    async (_, filter) => {
      const rig = await tableRig(azuriteOf());
      await rig.store.commit({ consumer: 'bounded', key: 'k1' }, digestOf('k1'), null);
      const pages = emptyPagesForever(rig.client);
      const result = await rig.run(['keys', 'list', 'bounded', '--max-pages', '5', '--page-size', '1', '--json', ...filter], {
        connect: async () => ({ backend: tableRecords(rig.client), target: `table ${rig.client.tableName}`, close: () => undefined }),
      });
      expect(pages.requests()).toBe(5);
      expect(result.code).toBe(ExitCode.Ok);
      expect(result.err.join('\n')).toMatch(/stopped at --max-pages; more may follow: add --continue \S+/);
      expect(result.err.join('\n')).not.toMatch(/unknown consumer/);
    },
  );

  test('a listing that ends early leaves the look-up only what is left of the bound (and it still finds an unknown consumer)', async () => {
    const rig = await tableRig(azuriteOf());
    await rig.store.commit({ consumer: 'known', key: 'k1' }, digestOf('k1'), null);
    let requests = 0;
    rig.client.pipeline.addPolicy({ name: 'count', sendRequest: async (request, next) => (request.method === 'GET' && requests++, next(request)) });
    const unknown = await rig.run(['keys', 'list', 'nobody', '--status', 'completed', '--max-pages', '40', '--partitions', '16'], {
      connect: async () => ({ backend: tableRecords(rig.client), target: `table ${rig.client.tableName}`, close: () => undefined }),
    });
    expect(unknown.code).toBe(ExitCode.NotFound);
    expect(unknown.err.join('\n')).toMatch(/unknown consumer "nobody"/);
    expect(requests).toBeLessThanOrEqual(40);
    requests = 0;
    const tight = await rig.run(['keys', 'list', 'nobody', '--status', 'completed', '--max-pages', '16', '--partitions', '16'], {
      connect: async () => ({ backend: tableRecords(rig.client), target: `table ${rig.client.tableName}`, close: () => undefined }),
    });
    expect(requests).toBeLessThanOrEqual(16);
    expect(tight.code).toBe(ExitCode.Ok); // the bound left the look-up nothing: an empty listing, no verdict on the name
  });
});

/** The CLI with no setting at all (an empty environment), its stderr lines. */
async function runBare(argv: readonly string[], connect: OperatorCliIo['connect']): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await runOperatorCli(argv, { env: {}, out: () => undefined, err: (line) => err.push(line), connect });
  return { code, err: err.join('\n') };
}

describe('keys: no store configured', () => {
  const noSettings: StoreConnection = { store: 'table', tableName: 'idempotency', partitionCount: 16, callTimeoutMs: 500 };

  test('with no setting, the connection says it assumed Azurite default and which settings it looked for (no request made)', async () => {
    const connected = await connectRecords(noSettings);
    expect(connected.target).toBe('table idempotency at http://127.0.0.1:10002/devstoreaccount1');
    expect(connected.assumed).toMatch(/IDEMPOTENCY_TABLE_CONNECTION_STRING \(--table-connection-string\) or IDEMPOTENCY_TABLE_ENDPOINT/);
    const given = await connectRecords({ ...noSettings, tableConnectionString: azuriteOf().connectionString });
    expect(given.assumed).toBeUndefined();
  });

  test('nothing answers at the assumed endpoint: exit 2, the endpoint tried and the settings to set, no "retry later"', async () => {
    // A port that accepts and never answers (as a host that drops the packets): the call's deadline ends it.
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => void sockets.add(socket));
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
    try {
      const connection = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${Buffer.from('k').toString('base64')};TableEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
      const result = await runBare(['keys', 'show', 'payments', 'k1', '--timeout-ms', '300'], async (c) => {
        // The console's own connection with no setting (it assumes Azurite's default), sent to the silent port instead of 10002.
        const real = await connectRecords(c);
        const client = TableClient.fromConnectionString(connection, c.tableName, { allowInsecureConnection: true });
        return { ...real, backend: tableRecords(client, { callTimeoutMs: c.callTimeoutMs }), target: `table ${c.tableName} at ${client.url}` };
      });
      const text = result.err;
      expect(result.code).toBe(ExitCode.Usage);
      expect(text).toContain(`no store is configured: none of IDEMPOTENCY_TABLE_CONNECTION_STRING`);
      expect(text).toContain(`tried Azurite's default (table idempotency at http://127.0.0.1:${port}/devstoreaccount1)`);
      expect(text).toMatch(/did not answer read within 300 ms/);
      expect(text).not.toMatch(/retry later/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  test('a store the settings named that does not answer: the endpoint tried is in the message (an outage: exit 1)', async () => {
    const port = await freePort(); // nothing listens there: the connection is refused
    const connection = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${Buffer.from('k').toString('base64')};TableEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
    const result = await runBare(['keys', 'show', 'payments', 'k1', '--timeout-ms', '2000', '--table-connection-string', connection], undefined);
    expect(result.code).toBe(ExitCode.Failed);
    expect(result.err).toContain(`(tried table idempotency at http://127.0.0.1:${port}/devstoreaccount1)`);
    expect(result.err).not.toMatch(/no store is configured/);
  });
});
