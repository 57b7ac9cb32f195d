import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as df from 'durable-functions';
import { DurableChargeWorkflow } from '../../src/app/DurableChargeWorkflow';
import { instancePage, statusWithoutInput, rpcBaseUrlOf, statusOrUnknown, type HttpGet } from '../../src/app/durableInstances';
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

/**
 * The task hub reads of src/app/durableInstances.ts in memory, beside the loopback API above: a client without the extension's RPC endpoint, the 404 read as "no such instance", the query's every parameter, an
 * answer other than 200, and the token the extension writes when there is none.
 */
const BASE = 'http://127.0.0.1:7071/runtime/webhooks/durabletask/';
const rpcClient = { clientData: { rpcBaseUrl: BASE } } as unknown as df.DurableClient;

function recordingHttp(answer: () => Response) {
  const requests: Array<{ url: string; headers: Record<string, string> }> = [];
  const http: HttpGet = async (url, init) => {
    requests.push({ url: url.toString(), headers: init.headers });
    return answer();
  };
  return { http, requests };
}

describe('statusWithoutInput and rpcBaseUrlOf', () => {
  test("on the RPC path the string 'false'; without an RPC endpoint (management URLs) the boolean false", () => {
    expect(rpcBaseUrlOf(rpcClient)).toBe(BASE);
    expect(statusWithoutInput(rpcClient)).toEqual({ showInput: 'false' });
    const plain = { clientData: {} } as unknown as df.DurableClient;
    expect(rpcBaseUrlOf(plain)).toBeUndefined();
    expect(statusWithoutInput(plain)).toEqual({ showInput: false });
    expect(rpcBaseUrlOf({} as df.DurableClient)).toBeUndefined();
  });
});

describe('statusOrUnknown', () => {
  test('the status as the client reads it, with the options given', async () => {
    const seen: unknown[] = [];
    const status = { instanceId: 'payment-1', runtimeStatus: 'Running' };
    const client = { getStatus: async (id: string, options: unknown) => (seen.push([id, options]), status) } as unknown as df.DurableClient;
    await expect(statusOrUnknown(client, 'payment-1', { showInput: false })).resolves.toBe(status);
    expect(seen).toEqual([['payment-1', { showInput: false }]]);
  });

  test('HTTP 404 (never started, or purged): undefined; any other failure is thrown as it is', async () => {
    const failing = (message: string) =>
      ({
        getStatus: async () => {
          throw new Error(message);
        },
      }) as unknown as df.DurableClient;
    await expect(statusOrUnknown(failing('Webhook returned unexpected status code HTTP 404: Not Found'), 'payment-1')).resolves.toBeUndefined();
    await expect(statusOrUnknown(failing('HTTP 500: host shutting down'), 'payment-1')).rejects.toThrow('HTTP 500: host shutting down');
  });
});

describe('instancePage', () => {
  test('without an RPC endpoint: one page of all from getStatusBy (from the epoch to the cutoff, the statuses given), no token', async () => {
    const queries: unknown[] = [];
    const client = {
      getStatusBy: async (filter: unknown) => {
        queries.push(filter);
        return [{ instanceId: 'payment-a', runtimeStatus: 'Completed', input: { idempotencyKey: 'a' }, output: 'x' }];
      },
    } as unknown as df.DurableClient;
    const statuses = ['Completed', 'Failed'] as df.OrchestrationRuntimeStatus[];
    const page = await instancePage(client, { createdBeforeMs: 5_000, runtimeStatus: statuses, pageSize: 10 });
    expect(page).toEqual({ statuses: [{ instanceId: 'payment-a', runtimeStatus: 'Completed', input: { idempotencyKey: 'a' } }] });
    expect(queries).toEqual([{ createdTimeFrom: new Date(0), createdTimeTo: new Date(5_000), runtimeStatus: ['Completed', 'Failed'] }]);
  });

  test('the RPC query: from the epoch, to the cutoff, the statuses, top, the inputs, the id prefix encoded; no token header on a first page', async () => {
    const r = recordingHttp(() => new Response('[]', { status: 200 }));
    const page = await instancePage(
      rpcClient,
      { createdBeforeMs: 60_000, runtimeStatus: ['Terminated'] as df.OrchestrationRuntimeStatus[], pageSize: 50, instanceIdPrefix: 'payment-a b' },
      r.http,
    );
    expect(page).toEqual({ statuses: [], continuationToken: undefined });
    expect(r.requests).toEqual([
      {
        url: `${BASE}instances/?createdTimeFrom=1970-01-01T00:00:00.000Z&createdTimeTo=1970-01-01T00:01:00.000Z&runtimeStatus=Terminated&top=50&showInput=true&instanceIdPrefix=payment-a%20b`,
        headers: {},
      },
    ]);
  });

  test('no prefix: the query ends at showInput; a token is sent as x-ms-continuation-token', async () => {
    const r = recordingHttp(() => new Response('[]', { status: 200, headers: { 'x-ms-continuation-token': 'tok-2' } }));
    const page = await instancePage(
      rpcClient,
      { createdBeforeMs: 0, runtimeStatus: ['Completed'] as df.OrchestrationRuntimeStatus[], pageSize: 1, continuationToken: 'tok-1' },
      r.http,
    );
    expect(page.continuationToken).toBe('tok-2');
    expect(r.requests[0].url.endsWith('&top=1&showInput=true')).toBe(true);
    expect(r.requests[0].headers).toEqual({ 'x-ms-continuation-token': 'tok-1' });
  });

  test("the extension's token 'null' is no token: the last page", async () => {
    const r = recordingHttp(
      () => new Response('[{"instanceId":"payment-z","runtimeStatus":"Failed"}]', { status: 200, headers: { 'x-ms-continuation-token': 'null' } }),
    );
    const page = await instancePage(rpcClient, { createdBeforeMs: 0, runtimeStatus: ['Failed'] as df.OrchestrationRuntimeStatus[], pageSize: 1 }, r.http);
    expect(page).toEqual({ statuses: [{ instanceId: 'payment-z', runtimeStatus: 'Failed' }], continuationToken: undefined });
  });

  test('an answer other than 200 fails the read with the status and at most 300 characters of the body', async () => {
    const r = recordingHttp(() => new Response(`busy ${'x'.repeat(400)}`, { status: 503 }));
    const read = instancePage(rpcClient, { createdBeforeMs: 0, runtimeStatus: ['Failed'] as df.OrchestrationRuntimeStatus[], pageSize: 1 }, r.http);
    await expect(read).rejects.toThrow(new Error(`Durable instance query answered HTTP 503: ${`busy ${'x'.repeat(400)}`.slice(0, 300)}`));
  });
});
