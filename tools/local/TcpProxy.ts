import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy on a loopback port in front of another loopback port, for injecting network outages
 * (tests and the demo only). `cut()` resets every open connection and every new one until
 * `restore()`: clients see ECONNRESET, as when the service or the network goes away, while the
 * service behind it keeps its state (restarting Azurite, in memory, would lose every record).
 */
export class TcpProxy {
  private readonly pairs = new Set<readonly [Socket, Socket]>();
  private isCut = false;
  /** Connections reset because of a cut (open ones destroyed plus new ones refused). */
  resets = 0;

  private constructor(
    private readonly server: Server,
    readonly targetPort: number,
  ) {}

  /** Starts a proxy on a free loopback port forwarding to `127.0.0.1:targetPort`. */
  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server, targetPort);
    server.on('connection', (client) => proxy.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get cutNow(): boolean {
    return this.isCut;
  }

  /** Starts an outage: open connections are reset, new ones are reset on arrival. */
  cut(): void {
    this.isCut = true;
    for (const [client, upstream] of this.pairs) {
      this.resets++;
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Ends the outage. */
  restore(): void {
    this.isCut = false;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.isCut) {
      this.resets++;
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(this.targetPort, '127.0.0.1');
    const pair = [client, upstream] as const;
    this.pairs.add(pair);
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
