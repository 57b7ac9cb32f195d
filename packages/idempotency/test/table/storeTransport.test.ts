import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { createDefaultHttpClient, createHttpHeaders, createPipelineRequest, RestError, type PipelineRequest } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import { StoreTransport, transportFor, type HttpClient, type TransportKit, type TransportRequest } from '../../src/stores/table/storeTransport';
import { skipIdlePolicies } from '../../src/stores/table/idlePolicies';

/**
 * The store's transport (storeTransport.ts) against the SDK's default HTTP client it stands in for, case by case on a
 * loopback server: what reaches the server, the answer, and each failure (abort before and during, the per-try timeout,
 * a refused connection, an insecure URL), and the requests it leaves to the SDK's client. And the idle policies
 * (idlePolicies.ts): the guarded pipeline keeps its order and names and runs a policy whenever it would act.
 */
interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

let server: http.Server;
let base: string;
const seen: Seen[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (req.url === '/hang') return; // never answers
      if (req.url === '/hang-body') return void res.writeHead(200, { 'content-type': 'text/plain' }).write('partial');
      if (req.url === '/gzip') return void res.writeHead(200, { 'content-encoding': 'gzip' }).end(zlib.gzipSync('{"zipped":true}'));
      res.writeHead(req.url === '/conflict' ? 409 : 204, { etag: 'W/"1"', 'x-ms-request-id': 'r1', 'set-cookie': ['a=1', 'b=2'] });
      res.end(req.url === '/conflict' ? '{"odata.error":{"code":"EntityAlreadyExists"}}' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const log = { lines: [] as string[], info: (line: string) => void log.lines.push(line), sanitizeUrl: (url: string) => url };
const sdk = createDefaultHttpClient() as unknown as HttpClient;
const kit = { createHttpHeaders, RestError } as unknown as TransportKit;
const transport = new StoreTransport(kit, sdk, log);

function request(path: string, extra: Partial<PipelineRequest> = {}): TransportRequest {
  return createPipelineRequest({
    url: `${base}${path}`,
    method: 'POST',
    body: '{"PartitionKey":"p","RowKey":"r"}',
    headers: createHttpHeaders({ 'Content-Type': 'application/json', 'Accept-Encoding': 'gzip,deflate', 'x-ms-client-request-id': 'fixed' }),
    allowInsecureConnection: true,
    ...extra,
  }) as unknown as TransportRequest;
}

/** What each client gives for the same request: the answer, or the failure's name, message and code. */
async function outcome(client: HttpClient, make: () => TransportRequest): Promise<unknown> {
  try {
    const response = await client.sendRequest(make());
    return { status: response.status, headers: response.headers.toJSON(), body: response.bodyAsText };
  } catch (error) {
    const { name, message, code } = error as { name: string; message: string; code?: string };
    return { name, message, code, restError: error instanceof RestError };
  }
}

async function sameFromBoth(make: () => TransportRequest): Promise<unknown> {
  seen.length = 0;
  const fromSdk = await outcome(sdk, make);
  const fromTransport = await outcome(transport, make);
  expect(fromTransport).toEqual(fromSdk);
  return fromTransport;
}

describe('the store transport', () => {
  test('sends what the SDK client sends and answers alike: a 204, a 409 with its body, a gzipped body', async () => {
    for (const path of ['/ok', '/conflict', '/gzip']) await sameFromBoth(() => request(path));
    seen.length = 0;
    await sdk.sendRequest(request('/ok'));
    await transport.sendRequest(request('/ok'));
    const [bySdk, byTransport] = seen.map(({ headers, ...rest }) => ({ ...rest, headers: { ...headers, connection: undefined } }));
    expect(byTransport).toEqual(bySdk);
    expect(seen[1].headers['content-length']).toBe('33');
  });

  test('fails alike: aborted before, aborted while waiting, timed out, refused, insecure', async () => {
    const aborted = new AbortController();
    aborted.abort();
    expect(await sameFromBoth(() => request('/ok', { abortSignal: aborted.signal }))).toMatchObject({ name: 'AbortError' });
    const later = () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      return request('/hang', { abortSignal: controller.signal });
    };
    expect(await sameFromBoth(later)).toMatchObject({ name: 'AbortError' });
    log.lines.length = 0;
    expect(await sameFromBoth(() => request('/hang', { timeout: 50 }))).toMatchObject({ name: 'AbortError' });
    expect(log.lines).toEqual([`request to '${base}/hang' timed out. canceling...`]);
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await sameFromBoth(() => request('/', { url: `http://127.0.0.1:${port}/` }))).toMatchObject({ code: 'ECONNREFUSED', restError: true });
    expect(await sameFromBoth(() => request('/ok', { allowInsecureConnection: false }))).toMatchObject({ name: 'Error' });
  });

  test('an abort after the answer began fails the body as the SDK client does', async () => {
    const during = () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      return request('/hang-body', { abortSignal: controller.signal });
    };
    await sameFromBoth(during);
  });

  test('leaves a request it does not send itself to the SDK client', async () => {
    const calls: TransportRequest[] = [];
    const fallback: HttpClient = { sendRequest: (req) => (calls.push(req), sdk.sendRequest(req)) };
    const own = new StoreTransport(kit, fallback, log);
    await own.sendRequest(request('/ok'));
    expect(calls).toHaveLength(0);
    for (const extra of [
      { body: Buffer.from('x') },
      { onUploadProgress: () => undefined },
      { disableKeepAlive: true },
      { streamResponseStatusCodes: new Set([200]) },
    ]) {
      await own.sendRequest(request('/ok', extra));
    }
    expect(calls).toHaveLength(4);
  });

  test('stands in only for the SDK default client: not for a client built with its own httpClient', () => {
    const plain = TableClient.fromConnectionString('UseDevelopmentStorage=true', 'tbl', { allowInsecureConnection: true });
    const service = (plain as unknown as { table: { client: { _httpClient?: HttpClient } } }).table.client;
    expect(transportFor(plain, service, kit)).toBeInstanceOf(StoreTransport);
    const custom = TableClient.fromConnectionString('UseDevelopmentStorage=true', 'tbl', { allowInsecureConnection: true, httpClient: sdk as never });
    expect(transportFor(custom, (custom as unknown as { table: { client: { _httpClient?: HttpClient } } }).table.client, kit)).toBeUndefined();
  });
});

describe('idle policies', () => {
  test('same names in the same order; each guarded policy runs when it would act', async () => {
    const client = TableClient.fromConnectionString('UseDevelopmentStorage=true', 'tbl', { allowInsecureConnection: true });
    const names = client.pipeline.getOrderedPolicies().map((policy) => policy.name);
    skipIdlePolicies(client);
    skipIdlePolicies(client);
    expect(client.pipeline.getOrderedPolicies().map((policy) => policy.name)).toEqual(names);
    const byName = (name: string) => client.pipeline.getOrderedPolicies().find((policy) => policy.name === name)!;
    const passed: PipelineRequest[] = [];
    const next = (req: PipelineRequest) => (passed.push(req), Promise.resolve({ status: 204, headers: createHttpHeaders(), request: req }));
    // A signal-like that is not an AbortSignal is wrapped into one, as before.
    const like = { aborted: false, addEventListener: () => undefined, removeEventListener: () => undefined };
    const wrapped = createPipelineRequest({ url: `${base}/`, abortSignal: like });
    await byName('wrapAbortSignalLikePolicy').sendRequest(wrapped, next);
    expect(passed[0].abortSignal).toBeInstanceOf(AbortSignal);
    // A multipart body is still built.
    const multipart = createPipelineRequest({ url: `${base}/`, multipartBody: { parts: [{ headers: createHttpHeaders(), body: new Uint8Array([65]) }] } });
    await byName('multipartPolicy').sendRequest(multipart, next);
    expect(passed[1].body).toBeDefined();
    expect(passed[1].headers.get('Content-Type')).toMatch(/^multipart\/mixed; boundary=/);
    // A string body passes through the form-data policy untouched.
    const plain = createPipelineRequest({ url: `${base}/`, body: 'x' });
    await byName('formDataPolicy').sendRequest(plain, next);
    expect(passed[2]).toBe(plain);
  });
});
