import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { TableClient } from '@azure/data-tables';
import { keyFromMessageId, payloadDigest, StoreUnavailableError, TableIdempotencyStore, type Claim } from 'azure-functions-idempotency/internal';
import { toDomainError } from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

/**
 * What a failed store call says was decided must be true for what it was: a write whose answer was
 * lost (the connection reset after the request was sent) may have landed; one that never left
 * (connection refused) or that the service refused (429, 503) decided nothing; a read decides nothing.
 */
const azuriteOf = useAzurite();
const key = keyFromMessageId('payments', 'pay-truth');
const digest = payloadDigest({ paymentId: 'pay-truth' });

/** Accepts, reads the request, then resets the connection: the request was sent, no answer came. */
async function resettingServer(): Promise<{ port: number; stop: () => Promise<void>; requests: () => number }> {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      requests++;
      socket.resetAndDestroy();
    });
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    requests: () => requests,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A store whose table endpoint is `port` on loopback (Azurite's account, another server). */
function storeAt(port: number, tableName = 'truth'): TableIdempotencyStore {
  const connectionString = azuriteOf().connectionString.replace(/127\.0\.0\.1:\d+/g, `127.0.0.1:${port}`);
  const client = TableClient.fromConnectionString(connectionString, tableName, {
    allowInsecureConnection: true,
    retryOptions: { maxRetries: 1, retryDelayInMs: 10, maxRetryDelayInMs: 20 },
  });
  return new TableIdempotencyStore(client, { retentionMs: 86_400_000, callTimeoutMs: 5_000 });
}

/** A real claim, made on Azurite: what a consumer holds when its store then fails. */
async function realClaim(): Promise<{ claim: Claim; tableName: string }> {
  const table = await freshTable(azuriteOf());
  const outcome = await new TableIdempotencyStore(table, { retentionMs: 86_400_000 }).claim(key, digest);
  if (outcome.kind !== 'claimed') throw new Error(`expected claimed, got ${outcome.kind}`);
  return { claim: outcome.claim, tableName: table.tableName };
}

describe('store errors say truthfully what may have been decided', () => {
  test('a completion whose connection resets after the request was sent: the write may have landed', async () => {
    const server = await resettingServer();
    try {
      const { claim, tableName } = await realClaim();
      const error = await storeAt(server.port, tableName)
        .complete(claim, { ok: true })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(server.requests()).toBeGreaterThan(0);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).writeMayHaveLanded).toBe(true);
      expect((error as StoreUnavailableError).message).toMatch(/the write may have landed/);
    } finally {
      await server.stop();
    }
  });

  test('a claim whose write and read-back both lose their answers: may have been written, and says so', async () => {
    const server = await resettingServer();
    try {
      const error = await storeAt(server.port)
        .claim(key, digest)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as StoreUnavailableError).writeMayHaveLanded).toBe(true);
      expect((error as StoreUnavailableError).message).toMatch(/may have been written/);
    } finally {
      await server.stop();
    }
  });

  test('a write to a closed port never left: nothing was decided', async () => {
    const server = await resettingServer();
    const port = server.port;
    await server.stop();
    const { claim, tableName } = await realClaim();
    const error = await storeAt(port, tableName)
      .complete(claim, { ok: true })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).writeMayHaveLanded).toBe(false);
    expect((error as StoreUnavailableError).message).toMatch(/nothing was decided/);
  });

  test('the service refusing a write (429, 503) decided nothing; a 500 or a read are told apart', () => {
    const of = (statusCode: number, kind: 'read' | 'write') => toDomainError({ statusCode }, 'complete', kind) as StoreUnavailableError;
    expect(of(429, 'write').writeMayHaveLanded).toBe(false);
    expect(of(503, 'write').message).toMatch(/nothing was decided/);
    expect(of(500, 'write').writeMayHaveLanded).toBe(true);
    expect(of(500, 'read').message).toMatch(/nothing was decided/);
    expect(toDomainError({}, 'park').message).toMatch(/a read decided nothing, a write may have landed/);
  });
});
