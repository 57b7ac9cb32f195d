import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP pass-through in front of the payment provider: once the provider has answered a charge, `afterCharge` says
 * whether the answer goes back to the activity; `'hold'` never answers (the Durable host is then killed: after the
 * restart the activity runs again with the same key).
 */
export class ProviderTap {
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(
    target: string,
    afterCharge: (charge: { paymentId: string; idempotencyKey: string; status: number }) => 'pass' | 'hold' | Promise<'pass' | 'hold'>,
  ): Promise<ProviderTap> {
    const base = target.endsWith('/') ? target : `${target}/`;
    const server = createServer((req, res) => {
      void (async () => {
        const body = await read(req);
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(req.headers))
          if (typeof value === 'string' && name !== 'host' && name !== 'connection') headers[name] = value;
        let answer: Response;
        try {
          answer = await fetch(new URL((req.url ?? '/').replace(/^\//, ''), base), {
            method: req.method,
            headers,
            body: req.method === 'GET' ? undefined : body,
          });
        } catch {
          res.destroy();
          return;
        }
        const text = await answer.text();
        if (req.method === 'POST' && /\/v1\/charges$/.test(req.url ?? '')) {
          let paymentId = '';
          try {
            const parsed = (JSON.parse(body) as { paymentId?: unknown }).paymentId;
            paymentId = typeof parsed === 'string' ? parsed : '';
          } catch {
            /* not JSON: the provider answered it */
          }
          const verdict = await afterCharge({ paymentId, idempotencyKey: String(req.headers['idempotency-key'] ?? ''), status: answer.status });
          if (verdict === 'hold') return; // the caller dies before it hears the answer
        }
        res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text);
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new ProviderTap(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += String(chunk)));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
