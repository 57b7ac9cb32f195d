/**
 * Quickstart on Cosmos DB for NoSQL: the same idempotent Service Bus consumer as `quickstart.ts`, its dedup
 * records in a Cosmos container instead of a table (docs/stores.md says when to choose which). Only the store
 * changes: the handler, its key and its replays are the same. The test `test/integration/cosmosQuickstart.test.ts`
 * compiles it and runs it on the in-process Cosmos emulator.
 */
import { type CosmosClient, type Container } from '@azure/cosmos';
import { app, type InvocationContext } from '@azure/functions';
import { getIdempotencyScope, makeIdempotent, type IdempotencyStore } from 'azure-functions-idempotency';
import { CosmosIdempotencyStore } from 'azure-functions-idempotency/cosmos';

export interface PaymentRequested {
  readonly paymentId: string;
  readonly amount: number;
}

/** Your side effect: here a stand-in for a provider that honours an `Idempotency-Key`. */
export type Charge = (payment: PaymentRequested, idempotencyKey: string, signal: AbortSignal) => Promise<{ chargeId: string }>;

/**
 * The store on a container partitioned on `/recordId` with TTL on (`defaultTtl: -1`): each record sets its own
 * `ttl` from the retention, so Cosmos deletes expired records itself (no sweep). In Azure the Bicep creates the
 * container and you pass a client with `aadCredentials` (the identity needs Cosmos DB Built-in Data Contributor);
 * here `ensureContainer` creates it for a local run.
 */
export async function createCosmosStore(client: CosmosClient): Promise<CosmosIdempotencyStore> {
  const container: Container = await CosmosIdempotencyStore.ensureContainer(client, 'idempotency', 'records');
  return new CosmosIdempotencyStore(container, {
    retentionMs: 30 * 86_400_000,
    leaseMs: 60_000,
    cacheSize: 10_000,
    // Optional: the request units of every answer, e.g. for a metric.
    onRequestCharge: ({ operation, requestCharge }) => void [operation, requestCharge],
  });
}

/** The handler, wrapped exactly as with the Table store. */
export function paymentsHandler(store: IdempotencyStore, charge: Charge) {
  return makeIdempotent(
    async (message: PaymentRequested, context: InvocationContext) => {
      const { claim, signal } = getIdempotencyScope()!;
      context.log(`charging ${message.paymentId}, attempt ${claim.attempt}`);
      return charge(message, message.paymentId, signal);
    },
    { store, consumer: 'payments' },
  );
}

/** In your Functions app: register the wrapped handler (outside the host this only warns). */
export function register(store: IdempotencyStore, charge: Charge): void {
  app.serviceBusQueue('payments', { connection: 'ServiceBusConnection', queueName: 'payments', handler: paymentsHandler(store, charge) });
}
