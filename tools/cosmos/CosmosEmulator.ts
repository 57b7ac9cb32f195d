import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { CosmosClient, type Container } from '@azure/cosmos';
import { createHttpServer } from '@vercel/cosmosdb-server';
import { CosmosIdempotencyStore } from 'azure-functions-idempotency/internal';
import { ensureOrdersContainer } from '../../src/orders/OrdersStore';

/**
 * `@vercel/cosmosdb-server` in this process, plain HTTP on a free loopback port, for the tests and the demo. Its
 * gaps: a transactional batch is NOT atomic, TTL is not enforced, queries ignore the partition-key option, any key
 * is accepted; tests must not assert what only the real service gives.
 */
export class CosmosEmulator {
  private shared: CosmosClient | undefined;

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
  ) {}

  static async start(): Promise<CosmosEmulator> {
    const server = createHttpServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    return new CosmosEmulator(server, `http://127.0.0.1:${port}`);
  }

  /** The client for this emulator (one per emulator, disposed by `stop`). */
  client(): CosmosClient {
    return (this.shared ??= cosmosClientFor(this.endpoint));
  }

  /** A fresh, uniquely named orders container (partition key `/orderId`, `defaultTtl: -1`). */
  async freshOrdersContainer(): Promise<Container> {
    return ensureOrdersContainer(this.client(), 'shop', `orders${randomBytes(5).toString('hex')}`);
  }

  /** A fresh, uniquely named idempotency container (partition key `/recordId`, `defaultTtl: -1`), as the Bicep creates it. */
  async freshIdempotencyContainer(): Promise<Container> {
    return CosmosIdempotencyStore.ensureContainer(this.client(), 'idempotency', `records${randomBytes(5).toString('hex')}`);
  }

  /** Disposes the client and closes the server and every open connection. */
  async stop(): Promise<void> {
    this.shared?.dispose();
    this.shared = undefined;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A Cosmos client for a loopback endpoint (the emulator, or a closed port to inject outages). */
export function cosmosClientFor(endpoint: string): CosmosClient {
  return new CosmosClient({
    endpoint,
    // The emulator accepts any key; this one is a placeholder, never a real credential.
    key: Buffer.from('emulator').toString('base64'),
    connectionPolicy: {
      enableEndpointDiscovery: false,
      requestTimeout: 5_000,
      retryOptions: { maxRetryAttemptCount: 3, fixedRetryIntervalInMilliseconds: 10, maxWaitTimeInSeconds: 2 },
    },
  });
}
