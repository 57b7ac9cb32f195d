import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { startEndpointProxies, type EndpointProxies, type StorageService } from '../../azurite/endpointProxies';

/** One request of the Durable engine to its storage, as the gate sees it before it is forwarded. */
export interface EngineStorageRequest {
  readonly service: StorageService;
  readonly method: string;
  /** Path and query, e.g. `/devstoreaccount1/hub-workitems/messages/<id>?popreceipt=...`. */
  readonly path: string;
  /** The body as text; a queue message's `MessageText` decoded from base64 when it was encoded. */
  readonly text: string;
}

/**
 * `pass` forwards the request; `cut` never forwards it and never answers (the engine's host is being killed, or a worker stalls there);
 * `busy` answers 503 ServerBusy without forwarding it (the storage account throttling: Azure's documented answer).
 */
export type GateVerdict = 'pass' | 'cut' | 'busy';

/** The Table service's answer to a throttled request (learn.microsoft.com, "Table service error codes": ServerBusy, 503). */
const SERVER_BUSY = JSON.stringify({
  'odata.error': { code: 'ServerBusy', message: { lang: 'en-US', value: 'The server is currently unable to receive requests.' } },
});

/**
 * An HTTP pass-through on loopback in front of an Azurite (blob, queue and table endpoints): each request is shown to
 * `verdict` before it is forwarded, so a test can stop the Durable engine at an exact step of DurableTask.AzureStorage
 * (the work item's delete after its answer was sent; the history write after an episode sent its messages) and kill
 * the host there; and to `beforeAnswer` once answered, so a test can write between an activity's read and its next
 * request (the record settled between the fence's read and the call). Tests only.
 */
export class EngineStorageGate {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });

  private proxies?: EndpointProxies;

  private constructor() {}

  /**
   * @param verdict before a request is forwarded (a promise holds it until it settles): `cut` keeps it from landing
   * @param beforeAnswer once storage answered a request, before the answer goes back (a test writes something in between)
   */
  static async start(
    connectionString: string,
    verdict: (request: EngineStorageRequest) => GateVerdict | Promise<GateVerdict>,
    beforeAnswer?: (request: EngineStorageRequest, status: number) => Promise<void> | void,
  ): Promise<EngineStorageGate> {
    const gate = new EngineStorageGate();
    gate.proxies = await startEndpointProxies(connectionString, (service, targetPort, req, res) =>
      gate.forward(service, targetPort, req, res, verdict, beforeAnswer),
    );
    return gate;
  }

  /** The same connection string with every endpoint pointing at the gate. */
  get connectionString(): string {
    return this.proxies!.connectionString;
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    await this.proxies?.stop();
  }

  private forward(
    service: StorageService,
    targetPort: number,
    req: IncomingMessage,
    res: ServerResponse,
    verdict: (request: EngineStorageRequest) => GateVerdict | Promise<GateVerdict>,
    beforeAnswer?: (request: EngineStorageRequest, status: number) => Promise<void> | void,
  ): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => void this.decide(req, res, targetPort, Buffer.concat(chunks), service, verdict, beforeAnswer));
  }

  private async decide(
    req: IncomingMessage,
    res: ServerResponse,
    targetPort: number,
    body: Buffer,
    service: StorageService,
    verdict: (request: EngineStorageRequest) => GateVerdict | Promise<GateVerdict>,
    beforeAnswer?: (request: EngineStorageRequest, status: number) => Promise<void> | void,
  ): Promise<void> {
    const seen = { service, method: req.method ?? 'GET', path: req.url ?? '/', text: textOf(body.toString('utf8')) };
    const decided = await verdict(seen);
    if (decided === 'cut') return; // never forwarded, never answered: the host dies holding it
    if (decided === 'busy') {
      res.writeHead(503, { 'content-type': 'application/json;odata=minimalmetadata', 'x-ms-error-code': 'ServerBusy' }).end(SERVER_BUSY);
      return;
    }
    const upstream = httpRequest(
      { host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, agent: this.agent },
      (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => parts.push(chunk));
        answer.on('end', () => {
          void (async () => {
            await beforeAnswer?.(seen, answer.statusCode ?? 502);
            res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(parts));
          })().catch(() => res.destroy());
        });
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', () => res.destroy());
    upstream.end(body);
  }
}

/** A queue message's text decoded (the engine's SDK may base64-encode it); any other body as it came. */
function textOf(body: string): string {
  const message = /<MessageText>([^<]*)<\/MessageText>/.exec(body);
  if (!message) return body;
  const decoded = Buffer.from(message[1], 'base64').toString('utf8');
  return /^[\s\x20-\x7e]*$/.test(decoded) && decoded.length > 0 && /[{"]/.test(decoded) ? decoded : message[1];
}
