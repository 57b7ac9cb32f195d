import { HttpRequest, HttpResponse, InvocationContext, type HttpResponseInit } from '@azure/functions';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A Functions v4 HTTP handler, as `app.http` registers it. */
export type LocalHttpHandler = (request: HttpRequest, context: InvocationContext) => Promise<HttpResponseInit>;

/** One HTTP function as the host serves it: `/api/<route>`. */
export interface LocalHttpRoute {
  readonly name: string;
  readonly methods: readonly string[];
  /** The route after `/api/`, without parameters (e.g. `payments`). */
  readonly route: string;
  /** `function`: a function key is required (`x-functions-key` header or `code` query), as the host checks it. */
  readonly authLevel: 'anonymous' | 'function';
  readonly handler: LocalHttpHandler;
}

export interface LocalHttpHostOptions {
  readonly routes: readonly LocalHttpRoute[];
  /** The function keys, by name (the host's `default` and named keys). */
  readonly functionKeys?: Readonly<Record<string, string>>;
  readonly port?: number;
  /** Told of every invocation's log line (level and message only). */
  readonly log?: (functionName: string, level: string, message: string) => void;
}

/**
 * A local stand-in for the Functions host's HTTP front, for tests and the demo: each loopback request adapted to the
 * v4 `HttpRequest` and an `InvocationContext`, the answer written through the library's own `HttpResponse`. Like the
 * host: `/api/<route>`, 404 unknown route, 405 other method, 401 without a valid function key on `authLevel:
 * 'function'`, 500 when the handler throws. Not modelled: the host's request limits and timeouts, EasyAuth.
 */
export class LocalHttpHost {
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private readonly options: LocalHttpHostOptions,
  ) {}

  static async start(options: LocalHttpHostOptions): Promise<LocalHttpHost> {
    const server = createServer();
    const host = new LocalHttpHost(server, options);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void host.serve(req, res));
    server.on('connection', (socket) => {
      host.sockets.add(socket);
      socket.on('close', () => host.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    return host;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return; // the client went away while sending
    }
    const url = new URL(req.url ?? '/', this.url);
    const path = url.pathname.replace(/\/+$/, '');
    const route = this.options.routes.find((r) => routePattern(r.route).test(path));
    if (!route) return this.write(res, 404, {}, Buffer.alloc(0));
    const method = (req.method ?? 'GET').toUpperCase();
    if (!route.methods.includes(method)) return this.write(res, 405, {}, Buffer.alloc(0));
    if (route.authLevel === 'function' && !this.hasValidKey(req, url)) return this.write(res, 401, {}, Buffer.alloc(0));

    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    const request = new HttpRequest({
      method,
      url: url.toString(),
      headers,
      query: Object.fromEntries(url.searchParams),
      body: { bytes: Buffer.concat(chunks) },
    });
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: route.name,
      logHandler: (level, ...args) => this.options.log?.(route.name, level, args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ')),
    });
    let response: HttpResponse;
    try {
      response = new HttpResponse(await route.handler(request, context));
    } catch (error) {
      this.options.log?.(route.name, 'error', `handler threw: ${error instanceof Error ? error.name : typeof error}`);
      return this.write(res, 500, {}, Buffer.alloc(0));
    }
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => (outHeaders[name] = value));
    this.write(res, response.status, outHeaders, Buffer.from(await response.arrayBuffer()));
  }

  private hasValidKey(req: IncomingMessage, url: URL): boolean {
    const header = req.headers['x-functions-key'];
    const presented = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('code');
    if (!presented) return false;
    const given = Buffer.from(presented);
    return Object.values(this.options.functionKeys ?? {}).some((key) => {
      const expected = Buffer.from(key);
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
  }

  private write(res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer): void {
    if (res.destroyed) return; // the client timed out and closed: the work was done, nobody reads the answer
    res.writeHead(status, { ...headers, 'content-length': String(body.length) });
    res.end(body);
  }
}

/** A route as the host matches it: `/api/<route>`, each `{name}` one path segment. */
function routePattern(route: string): RegExp {
  const escaped = route.split(/(\{[^}]+\})/).map((part) => (/^\{[^}]+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^/api/${escaped.join('')}$`);
}
