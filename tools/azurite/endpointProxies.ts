import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A storage account's services, as a connection string names their endpoints. */
export type StorageService = 'blob' | 'queue' | 'table';

const ENDPOINT: Record<StorageService, string> = { blob: 'BlobEndpoint', queue: 'QueueEndpoint', table: 'TableEndpoint' };

/** One HTTP server on a free loopback port per endpoint of a connection string, and the string pointed at them. */
export interface EndpointProxies {
  /** The same connection string with every proxied endpoint pointing at its proxy. */
  readonly connectionString: string;
  stop(): Promise<void>;
}

/**
 * Starts one proxy per explicit loopback endpoint of `connectionString` (`BlobEndpoint`, `QueueEndpoint`,
 * `TableEndpoint` on 127.0.0.1, as `AzuriteStorage` and `AzuriteTable` give them); `handle` gets each request with
 * its service and the port it was meant for. Tests, the demo and the bench only.
 * @throws Error when the string names no loopback endpoint
 */
export async function startEndpointProxies(
  connectionString: string,
  handle: (service: StorageService, targetPort: number, req: IncomingMessage, res: ServerResponse) => void,
): Promise<EndpointProxies> {
  const servers = new Map<StorageService, Server>();
  for (const service of ['blob', 'queue', 'table'] as const) {
    const match = new RegExp(`${ENDPOINT[service]}=http://127\\.0\\.0\\.1:(\\d+)`).exec(connectionString);
    if (!match) continue;
    const server = createServer((req, res) => handle(service, Number(match[1]), req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    servers.set(service, server);
  }
  if (servers.size === 0) throw new Error('the connection string names no loopback endpoint to proxy');
  let proxied = connectionString;
  for (const [service, server] of servers) {
    const port = (server.address() as AddressInfo).port;
    proxied = proxied.replace(new RegExp(`(${ENDPOINT[service]}=http://127\\.0\\.0\\.1:)\\d+`), `$1${port}`);
  }
  return {
    connectionString: proxied,
    stop: async () => {
      await Promise.all(
        [...servers.values()].map(
          (server) =>
            new Promise<void>((resolve) => {
              server.closeAllConnections();
              server.close(() => resolve());
            }),
        ),
      );
    },
  };
}
