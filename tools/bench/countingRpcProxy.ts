import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SlowRequests } from './slowRequests';

/** Calls of the payments trigger's Durable client on the extension's HTTP API, by kind. */
export interface RpcCounts {
  /** `GET .../instances/{id}`: `getStatus`, what the holding design polls with. */
  statusPolls: number;
  /** `POST .../orchestrators/{name}`: `startNew`. */
  starts: number;
  other: number;
}

/**
 * An HTTP pass-through to the Durable extension's RPC endpoint (`rpcBaseUrl`) that counts the trigger's client
 * calls: status polls and starts. Loopback only.
 */
export async function countingRpcProxy(target: string) {
  const counts: RpcCounts = { statusPolls: 0, starts: 0, other: 0 };
  /** Calls whose answer took 200 ms or more (the Durable host's, as seen through the proxy). */
  const slow = new SlowRequests();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    let kind: keyof RpcCounts = 'other';
    if (req.method === 'GET' && /\/instances\//.test(path)) kind = 'statusPolls';
    else if (req.method === 'POST' && /\/orchestrators\//.test(path)) kind = 'starts';
    counts[kind]++;
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      const sentAtMs = Date.now();
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
      fetch(new URL(path, target), { method: req.method, headers, body: req.method === 'GET' ? undefined : body }).then(
        async (answer) => {
          const text = await answer.text();
          slow.record(`rpc.${kind}`, sentAtMs);
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text);
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    counts,
    slow,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
