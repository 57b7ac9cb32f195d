import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (req.method === 'GET' && /\/instances\//.test(path)) counts.statusPolls++;
    else if (req.method === 'POST' && /\/orchestrators\//.test(path)) counts.starts++;
    else counts.other++;
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
      fetch(new URL(path, target), { method: req.method, headers, body: req.method === 'GET' ? undefined : body }).then(
        async (answer) => res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text()),
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    counts,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
