import type * as df from 'durable-functions';
import { instancePage, rpcBaseUrlOf, statusOrUnknown, statusWithoutInput, type HttpGet } from '../../src/app/durableInstances';

/**
 * The task hub reads of src/app/durableInstances.ts that the loopback test (durableInstances.test.ts) does not reach:
 * a client without the extension's RPC endpoint, the 404 read as "no such instance", the query's every parameter, an
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
