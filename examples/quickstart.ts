/**
 * Quickstart: an idempotent Service Bus consumer on Azure Functions v4 (Node.js) with the core's
 * package `azure-functions-idempotency`. The README's "Using the core" is this file; the
 * test `test/integration/quickstart.test.ts` compiles it and runs it against Azurite.
 */
import { TableClient, type TableServiceClientOptions } from '@azure/data-tables';
import { app, type InvocationContext } from '@azure/functions';
import { getIdempotencyScope, makeIdempotent, type IdempotencyStore } from 'azure-functions-idempotency';
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';

export interface PaymentRequested {
  readonly paymentId: string;
  readonly amount: number;
}

/** Your side effect: here a stand-in for a provider that honours an `Idempotency-Key`. */
export type Charge = (payment: PaymentRequested, idempotencyKey: string, signal: AbortSignal) => Promise<{ chargeId: string }>;

/**
 * The store: one table, created once at start. In Azure pass a `DefaultAzureCredential` client; for
 * Azurite over http, `{ allowInsecureConnection: true }` (without it every call fails naming that option).
 */
export async function createStore(connectionString: string, clientOptions: TableServiceClientOptions = {}): Promise<TableIdempotencyStore> {
  const client = TableClient.fromConnectionString(connectionString, 'idempotency', clientOptions);
  const store = new TableIdempotencyStore(client, { retentionMs: 30 * 86_400_000, leaseMs: 60_000, cacheSize: 10_000 });
  await store.ensureTable();
  return store;
}

/**
 * The handler, wrapped as it is: the key is the message's `messageId` (from `context.triggerMetadata`),
 * the payload digest is the message, the lease is renewed while it runs, a redelivery reads first.
 */
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
