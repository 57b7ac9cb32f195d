import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LocalDurableBackend } from './LocalDurableBackend';

/**
 * The Durable extension's HTTP API as the SDK's `DurableClient` calls it (`rpcBaseUrl`), for the calls the
 * payments trigger makes, answered from the local backend's store:
 * - `POST orchestrators/{name}/{instanceId}`: 202 with the management payload; an instance that is pending
 *   or running gives 500 with the extension's error body (`startNew` then rejects), a final one starts again;
 * - `GET instances/{instanceId}`: 202 while pending or running, 200 when final, 404 with no body when unknown
 *   (`getStatus` then throws "... replied with HTTP 404 response ...").
 * Any other route is 404, as the extension answers an unknown route.
 */
export class DurableHttpApi {
  private constructor(
    private readonly server: Server,
    readonly rpcBaseUrl: string,
    /** Requests the clients made: starts (`POST orchestrators/...`) and status reads (`GET instances/...`). */
    readonly calls: ClientCalls,
  ) {}

  static async start(backend: LocalDurableBackend, orchestrations: ReadonlySet<string>): Promise<DurableHttpApi> {
    const calls: ClientCalls = { starts: 0, statusReads: 0 };
    const server = createServer((req, res) => {
      handle(backend, orchestrations, req, res, calls).catch((error: unknown) => {
        send(res, 500, { Message: 'Something went wrong while processing your request', ExceptionMessage: String((error as Error)?.message ?? error) });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return new DurableHttpApi(server, `http://127.0.0.1:${port}/durabletask/`, calls);
  }

  /** The `durableClient` input binding's data as the host passes it to the worker (a JSON string). */
  clientBindingData(taskHubName = 'LocalTaskHub'): string {
    const base = this.rpcBaseUrl.replace(/\/durabletask\/$/, '/runtime/webhooks/durabletask');
    return JSON.stringify({
      taskHubName,
      creationUrls: {
        createNewInstancePostUri: `${base}/orchestrators/{functionName}[/{instanceId}]`,
        createAndWaitOnNewInstancePostUri: `${base}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}`,
      },
      managementUrls: {
        id: 'INSTANCEID',
        statusQueryGetUri: `${base}/instances/INSTANCEID?taskHub=${taskHubName}&connection=Storage`,
        sendEventPostUri: `${base}/instances/INSTANCEID/raiseEvent/{eventName}?taskHub=${taskHubName}&connection=Storage`,
        terminatePostUri: `${base}/instances/INSTANCEID/terminate?reason={text}&taskHub=${taskHubName}&connection=Storage`,
        rewindPostUri: `${base}/instances/INSTANCEID/rewind?reason={text}&taskHub=${taskHubName}&connection=Storage`,
        purgeHistoryDeleteUri: `${base}/instances/INSTANCEID?taskHub=${taskHubName}&connection=Storage`,
      },
      baseUrl: base,
      requiredQueryStringParameters: '',
      rpcBaseUrl: this.rpcBaseUrl,
      httpBaseUrl: '',
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Counts of the client's requests (the handoff's "no status poll on a fresh payment" is read from them). */
export interface ClientCalls {
  starts: number;
  statusReads: number;
}

async function handle(
  backend: LocalDurableBackend,
  orchestrations: ReadonlySet<string>,
  req: IncomingMessage,
  res: ServerResponse,
  calls: ClientCalls,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const path = decodeURIComponent(url.pathname).replace(/^\/durabletask\//, '');
  const body = await readBody(req);
  const start = /^orchestrators\/([^/]+)(?:\/(.+))?$/.exec(path);
  if (start && req.method === 'POST') {
    calls.starts++;
    const [, name, instanceId = crypto.randomUUID().replace(/-/g, '')] = start;
    if (!orchestrations.has(name)) {
      return send(res, 400, { Message: 'One or more of the arguments submitted is incorrect', ExceptionMessage: `The function '${name}' doesn't exist.` });
    }
    if (!(await backend.start(name, instanceId, body === '' ? 'null' : body))) {
      const existing = await backend.store.instance(instanceId);
      return send(res, 500, {
        Message: 'Something went wrong while processing your request',
        ExceptionMessage: `An Orchestration instance with the status ${existing?.runtimeStatus ?? 'Pending'} already exists.`,
        ExceptionType: 'System.InvalidOperationException',
      });
    }
    return send(res, 202, { id: instanceId, statusQueryGetUri: `${url.origin}/durabletask/instances/${instanceId}` });
  }
  const status = /^instances\/([^/]+)$/.exec(path);
  if (status && req.method === 'GET') {
    calls.statusReads++;
    const row = await backend.store.instance(status[1]);
    if (!row) return send(res, 404);
    const final = row.runtimeStatus === 'Completed' || row.runtimeStatus === 'Failed' || row.runtimeStatus === 'Terminated';
    return send(res, final ? 200 : 202, {
      name: row.name,
      instanceId: row.instanceId,
      runtimeStatus: row.runtimeStatus,
      input: url.searchParams.get('showInput') === 'false' ? null : (JSON.parse(row.inputJson) as unknown),
      customStatus: null,
      output: JSON.parse(row.outputJson) as unknown,
      createdTime: row.createdTime,
      lastUpdatedTime: row.lastUpdatedTime,
    });
  }
  send(res, 404);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) return void res.writeHead(status).end();
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
}
