import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as df from 'durable-functions';
import { DurableChargeWorkflow } from '../../src/app/DurableChargeWorkflow';
import { instancePage, statusWithoutInput } from '../../src/app/durableInstances';
import { purgeDurableRecords } from '../../src/app/durablePurge';

/**
 * The app's reads of the task hub through durable-functions 3.5's real client and its own HTTP calls, against a
 * loopback server that answers as the extension's HTTP API does and records each request: status reads without the
 * input, the instance query page by page, and the purge reading one page at a time within its budget.
 */

// The library's own client class (not exported by its typings: `df.getClient` builds it from a context).
const { DurableClient } = require('durable-functions/lib/src/durableClient/DurableClient') as { DurableClient: new (data: unknown) => unknown };

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function withApi(handler: Handler, run: (client: df.DurableClient, requests: string[]) => Promise<void>): Promise<void> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers['x-ms-continuation-token'] ?? ''}`.trim());
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/runtime/webhooks/durabletask/`;
  const client = new DurableClient({
    taskHubName: 'hub',
    creationUrls: { createNewInstancePostUri: `${base}orchestrators/{functionName}` },
    managementUrls: { id: 'INSTANCEID', statusQueryGetUri: `${base}instances/INSTANCEID?taskHub=hub` },
    baseUrl: base,
    requiredQueryStringParameters: '',
    rpcBaseUrl: base,
  }) as df.DurableClient;
  try {
    await run(client, requests);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

describe('task hub reads (durable-functions 3.5 client, loopback API)', () => {
  test('showInput: false alone is dropped from the query by the client; statusWithoutInput sends showInput=false', async () => {
    await withApi(
      (_req, res) =>
        json(res, 200, {
          name: 'chargePayment',
          instanceId: 'payment-1',
          runtimeStatus: 'Completed',
          input: null,
          output: { status: 'succeeded' },
          createdTime: '2026-12-02T00:00:00Z',
          lastUpdatedTime: '2026-12-02T00:00:01Z',
        }),
      async (client, requests) => {
        await client.getStatus('payment-1', { showInput: false });
        expect(requests[0]).not.toMatch(/showInput/); // the library's behaviour this works around
        await client.getStatus('payment-1', statusWithoutInput(client));
        expect(requests[1]).toMatch(/instances\/payment-1\?showInput=false$/);
        await expect(new DurableChargeWorkflow(client).status('payment-1')).resolves.toEqual({ state: 'completed', output: { status: 'succeeded' } });
        expect(requests[2]).toMatch(/showInput=false/);
      },
    );
  });

  test('instancePage reads one page (top) and hands back the continuation token; the next page sends it', async () => {
    await withApi(
      (req, res) =>
        req.headers['x-ms-continuation-token']
          ? json(res, 200, [{ instanceId: 'payment-b', runtimeStatus: 'Failed', input: { idempotencyKey: 'b' } }])
          : json(res, 200, [{ instanceId: 'payment-a', runtimeStatus: 'Completed', input: { idempotencyKey: 'a' } }], { 'x-ms-continuation-token': 'tok1' }),
      async (client, requests) => {
        const statuses = [df.OrchestrationRuntimeStatus.Completed, df.OrchestrationRuntimeStatus.Failed];
        const first = await instancePage(client, { createdBeforeMs: 1_000, runtimeStatus: statuses, pageSize: 1 });
        expect(first).toMatchObject({ statuses: [{ instanceId: 'payment-a' }], continuationToken: 'tok1' });
        expect(requests[0]).toMatch(/createdTimeTo=1970-01-01T00:00:01.000Z&runtimeStatus=Completed,Failed&top=1&showInput=true$/);
        const second = await instancePage(client, { createdBeforeMs: 1_000, runtimeStatus: statuses, pageSize: 1, continuationToken: first.continuationToken });
        expect(second).toEqual({
          statuses: [{ instanceId: 'payment-b', runtimeStatus: 'Failed', input: { idempotencyKey: 'b' } }],
          continuationToken: undefined,
        });
        expect(requests[1]).toMatch(/ tok1$/);
      },
    );
  });

  test('the purge reads a page, purges it, and reads the next only while its budget lasts; a live record keeps its run and entity', async () => {
    const pages = [
      [
        { instanceId: 'payment-k1', runtimeStatus: 'Completed', input: { idempotencyKey: 'p1' } },
        { instanceId: 'payment-k2', runtimeStatus: 'Failed', input: { idempotencyKey: 'p2' } },
      ],
      [{ instanceId: 'payment-k3', runtimeStatus: 'Completed', input: { idempotencyKey: 'p3' } }],
      [{ instanceId: 'payment-k4', runtimeStatus: 'Completed', input: { idempotencyKey: 'p4' } }],
    ];
    const handler: Handler = (req, res) => {
      if (req.method === 'DELETE') return json(res, 200, { instancesDeleted: 1 });
      const index = Number(req.headers['x-ms-continuation-token'] ?? 0);
      json(res, 200, pages[index], index + 1 < pages.length ? { 'x-ms-continuation-token': String(index + 1) } : {});
    };
    // All pages within the budget: p2's record is live (held, or in progress): its run and entity stay.
    await withApi(handler, async (client, requests) => {
      const live: string[] = [];
      const report = await purgeDurableRecords(client, {
        cutoffMs: 1_000,
        budgetMs: 60_000,
        clock: { nowMs: () => 0 },
        pageSize: 2,
        recordLive: async (key, entityKey) => (live.push(`${key}:${entityKey}`), key === 'p2'),
      });
      expect(report).toEqual({ found: 4, orchestrations: 3, entities: 3, keptLive: 1, pages: 3, stoppedByBudget: false });
      expect(live).toEqual(['p1:k1', 'p2:k2', 'p3:k3', 'p4:k4']);
      expect(requests.filter((r) => r.startsWith('DELETE'))).not.toEqual(expect.arrayContaining([expect.stringMatching(/k2/)]));
      expect(requests.filter((r) => r.startsWith('DELETE')).map((r) => r.split(' ')[1].replace(/^.*instances\//, ''))).toEqual([
        '@paymentcharge@k1',
        'payment-k1',
        '@paymentcharge@k3',
        'payment-k3',
        '@paymentcharge@k4',
        'payment-k4',
      ]);
    });
    // A budget that runs out during the first page: one page read, never the backlog.
    await withApi(handler, async (client, requests) => {
      let now = 0;
      const report = await purgeDurableRecords(client, {
        cutoffMs: 1_000,
        budgetMs: 10,
        clock: { nowMs: () => now },
        pageSize: 2,
        recordLive: async () => ((now += 10), false),
      });
      expect(report).toMatchObject({ pages: 1, stoppedByBudget: true, orchestrations: 1 });
      expect(requests.filter((r) => r.startsWith('GET'))).toHaveLength(1);
    });
  });
});
