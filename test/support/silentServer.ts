import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP server on a free loopback port that accepts every connection, reads what it is sent and
 * never answers: a store that hangs. `stop()` destroys the connections it holds and closes.
 */
export class SilentServer {
  private readonly sockets = new Set<Socket>();
  /** Bytes received so far (so a test can see that requests arrived). */
  bytesReceived = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<SilentServer> {
    const server = createServer();
    const silent = new SilentServer(server);
    server.on('connection', (socket) => {
      silent.sockets.add(socket);
      socket.on('data', (chunk) => (silent.bytesReceived += chunk.length));
      socket.on('error', () => undefined);
      socket.on('close', () => silent.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return silent;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Connections open now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
