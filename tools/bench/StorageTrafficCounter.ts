import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { startEndpointProxies, type EndpointProxies } from '../azurite/endpointProxies';
import { SlowRequests } from './slowRequests';
import { classifyStorageRequest, type StorageRequestKind, type StorageService } from './storageRequestKind';

/** Counts by kind: `service.resource.operation` -> requests, with each kind's billing class. */
export interface StorageCounts {
  readonly requests: Readonly<Record<string, number>>;
  readonly billing: Readonly<Record<string, StorageRequestKind['billing']>>;
  /** Queue messages handed out by dequeues (`get` with messages), by queue. */
  readonly dequeuedMessages: Readonly<Record<string, number>>;
}

/** Names a resource for the counts (e.g. a task hub's `payments1a2b-control-03` -> `control`). */
export type ResourceAlias = (service: StorageService, resource: string) => string;

/**
 * A counting HTTP proxy on loopback in front of Azurite's blob, queue and table endpoints: every request sent through
 * it (each SDK retry too: a billed transaction in Azure) is forwarded unchanged and counted by kind
 * ({@link classifyStorageRequest}); a dequeue counts as `get` with messages, `emptyGet` without (an idle poll).
 */
export class StorageTrafficCounter {
  private readonly requests = new Map<string, number>();
  private readonly billing = new Map<string, StorageRequestKind['billing']>();
  private readonly dequeued = new Map<string, number>();
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 });
  /** Requests whose answer took 200 ms or more (Azurite's, as seen through the proxy). */
  readonly slow = new SlowRequests();

  private proxies?: EndpointProxies;

  private constructor(private readonly alias: ResourceAlias) {}

  /**
   * Starts one proxy per endpoint of `connectionString` (explicit `BlobEndpoint`, `QueueEndpoint`, `TableEndpoint`
   * on loopback, as `AzuriteStorage` and `AzuriteTable` give them).
   */
  static async start(connectionString: string, alias: ResourceAlias = (_, name) => name): Promise<StorageTrafficCounter> {
    const counter = new StorageTrafficCounter(alias);
    counter.proxies = await startEndpointProxies(connectionString, (service, target, req, res) => counter.forward(service, target, req, res));
    return counter;
  }

  /** The same connection string with every proxied endpoint pointing at its proxy. */
  get connectionString(): string {
    return this.proxies!.connectionString;
  }

  /** A copy of the counts so far (subtract two snapshots with {@link diffCounts} to count one phase). */
  snapshot(): StorageCounts {
    return {
      requests: Object.fromEntries(this.requests),
      billing: Object.fromEntries(this.billing),
      dequeuedMessages: Object.fromEntries(this.dequeued),
    };
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    await this.proxies?.stop();
  }

  private count(kind: StorageRequestKind, operation = kind.operation): void {
    const key = `${kind.service}.${this.alias(kind.service, kind.resource)}.${operation}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    this.billing.set(key, kind.billing);
  }

  private forward(service: StorageService, targetPort: number, req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const sentAtMs = Date.now();
      const body = Buffer.concat(chunks);
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));
      const kind = classifyStorageRequest({
        service,
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers,
        body: req.url?.includes('$batch') ? body.toString('utf8') : undefined,
      });
      const upstream = httpRequest(
        { host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, agent: this.agent },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => parts.push(chunk));
          answer.on('end', () => {
            const payload = Buffer.concat(parts);
            if (kind.service === 'queue' && kind.operation === 'get') {
              const messages = (payload.toString('utf8').match(/<QueueMessage>/g) ?? []).length;
              this.count(kind, messages > 0 ? 'get' : 'emptyGet');
              const queue = this.alias('queue', kind.resource);
              if (messages > 0) this.dequeued.set(queue, (this.dequeued.get(queue) ?? 0) + messages);
            } else this.count(kind);
            this.slow.record(`${kind.service}.${this.alias(kind.service, kind.resource)}.${kind.operation}`, sentAtMs);
            res.writeHead(answer.statusCode ?? 502, answer.headers).end(payload);
          });
          answer.on('error', () => res.destroy());
        },
      );
      upstream.on('error', () => {
        // Azurite refused or reset: the client sees a reset, as it would without the proxy; the attempt still counts.
        this.count(kind);
        res.destroy();
      });
      upstream.end(body);
    });
  }
}

/** `after - before`, kind by kind (kinds that did not change are left out). */
export function diffCounts(after: StorageCounts, before: StorageCounts): StorageCounts {
  const minus = (a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>) =>
    Object.fromEntries(
      Object.entries(a)
        .map(([key, value]) => [key, value - (b[key] ?? 0)] as const)
        .filter(([, value]) => value !== 0),
    );
  return { requests: minus(after.requests, before.requests), billing: after.billing, dequeuedMessages: minus(after.dequeuedMessages, before.dequeuedMessages) };
}
