import type { PipelineRequest } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import { TableIdempotencyStore, type ClaimOutcome, type TableIdempotencyStoreOptions } from 'azure-functions-idempotency/internal';
import type { AzuriteTable } from '../../../../test/support/azurite';
import { FakeClock, freshTable } from '../../../../test/support/tables';

/**
 * Helpers of the Table store's workflow tests (tableStoreWrites, tableAcquire, tableClaimMany): a store on
 * a fresh Azurite table, and faults put on the wire by a pipeline policy of the real TableClient (no mock of the SDK).
 */
export const DAY_MS = 86_400_000;

export interface StoreOnAzurite {
  readonly store: TableIdempotencyStore;
  readonly client: TableClient;
  readonly clock: FakeClock;
}

/** A store (lease 60 s, no cache unless given) on a fresh table of `azurite`. */
export async function storeOn(azurite: AzuriteTable, options: Partial<TableIdempotencyStoreOptions> = {}): Promise<StoreOnAzurite> {
  const clock = new FakeClock();
  const client = await freshTable(azurite);
  const store = new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, leaseMs: 60_000, clock, ...options });
  return { store, client, clock };
}

/** Another client on the same table (a rival writer, or a store's own client for faults put outside its retries). */
export function clientOn(azurite: AzuriteTable, tableName: string): TableClient {
  return TableClient.fromConnectionString(azurite.connectionString, tableName, {
    allowInsecureConnection: true,
    retryOptions: { maxRetries: 1, retryDelayInMs: 10, maxRetryDelayInMs: 20 },
  });
}

/** What a policy may do around one request: before it is sent, and after its answer came (the answer may be replaced by a throw). */
export interface Around {
  before?: (request: PipelineRequest) => Promise<void> | void;
  after?: (request: PipelineRequest, status: number) => Promise<void> | void;
}

/**
 * Runs `around` on every request of `client`: after the SDK's retry policy (each try is seen, a thrown fault may be
 * retried), or with `outside` before it (a fault is the call's answer, never retried; the SDK still retries a stale
 * keep-alive socket's reset underneath).
 */
export function onRequests(client: TableClient, around: Around, outside = false): void {
  client.pipeline.addPolicy(
    {
      name: `around-${Math.random()}`,
      sendRequest: async (request, next) => {
        await around.before?.(request);
        const response = await next(request);
        await around.after?.(request, response.status);
        return response;
      },
    },
    outside ? { phase: 'Serialize' } : { afterPhase: 'Retry' },
  );
}

/** Counts the requests `client` sends, by method ("POST", "PUT", "PATCH", "GET", "DELETE"). */
export function countRequests(client: TableClient): { of: (method: string) => number; total: () => number } {
  const counts = new Map<string, number>();
  onRequests(client, { before: (request) => void counts.set(request.method, (counts.get(request.method) ?? 0) + 1) });
  return { of: (method) => counts.get(method) ?? 0, total: () => [...counts.values()].reduce((a, b) => a + b, 0) };
}

/** The claim of an outcome that must be one. */
export function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

/** The error `call` fails with (a test fails when it does not). */
export async function failureOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => new Error('expected a failure, the call succeeded'),
    (error: unknown) => error,
  );
}
