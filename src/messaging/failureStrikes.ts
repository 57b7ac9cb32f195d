import { createHash } from 'node:crypto';
import type { TableClient } from '@azure/data-tables';
import { systemClock, type Clock, DEFAULT_STORE_TIMEOUT_MS, withDeadline } from 'azure-functions-idempotency';
import { toDomainError } from 'azure-functions-idempotency/table';
// Internal: int64/toNumber are the core's Table Int64 encoding, reused for this app's own rows (Table plumbing, not the package's API).
import { int64, toNumber } from 'azure-functions-idempotency/internal';

/** Failures of one batch, the same way, after which its events are taken one by one and the failing ones parked. */
export const DEFAULT_MAX_STRIKES = 3;

/**
 * How a failure reads for counting "the same way": the error's name and status (or code), and its message with
 * digits, ids and times blanked; never a payload (an error message does not carry one here).
 */
export function failureSignature(error: unknown): string {
  if (!(error instanceof Error)) return `thrown ${typeof error}`;
  const { statusCode, code } = error as { statusCode?: unknown; code?: unknown };
  const status = typeof statusCode === 'number' ? ` ${statusCode}` : typeof code === 'string' ? ` ${code}` : '';
  const message = error.message.replace(/[0-9a-f]{8,}|\d+/gi, '#').slice(0, 300);
  return `${error.name}${status}: ${message}`;
}

/** The parking-table partition of a consumer's failure strikes (swept by the expiry timer: `src/app/rewardMarkerSweep.ts`). */
export function strikesPartitionOf(consumer: string): string {
  return `strikes-${consumer}`;
}

/**
 * Counts a stream batch's failures across invocations and hosts, so that a batch that fails the same way again and
 * again (the trigger retries it forever: Event Hubs cannot skip an event) is noticed and its poison event parked.
 * One row per (consumer, where the batch starts, failure signature) in partition `strikes-<consumer>` of the parking
 * table; written only when a batch fails (nothing on the happy path). Counting is approximate under two hosts
 * failing the same batch at once (read, then write: one strike may be lost), which only delays the parking by a retry.
 * Rows last struck longer ago than the rewards markers' retention are deleted by the expiry timer.
 */
export class FailureStrikes {
  constructor(
    readonly client: TableClient,
    private readonly clock: Clock = systemClock,
    private readonly callTimeoutMs: number = DEFAULT_STORE_TIMEOUT_MS,
  ) {}

  /**
   * Records one more failure of the batch starting at `place` with `signature`; answers the count so far.
   * @throws StoreUnavailableError or StoreRequestError (the caller throws its batch's failure then).
   */
  async record(consumer: string, place: string, signature: string): Promise<number> {
    const partitionKey = strikesPartitionOf(consumer);
    const rowKey = createHash('sha256')
      .update(JSON.stringify([place, signature]))
      .digest('hex');
    try {
      return await withDeadline(this.callTimeoutMs, 'recordStrike', 'write', async (abortSignal) => {
        let count = 0;
        try {
          count = toNumber((await this.client.getEntity<Record<string, unknown>>(partitionKey, rowKey, { abortSignal })).count);
        } catch (error) {
          if ((error as { statusCode?: number }).statusCode !== 404) throw error;
        }
        const entity = {
          partitionKey,
          rowKey,
          place: place.slice(0, 1000),
          signature: signature.slice(0, 1000),
          count: int64(count + 1),
          lastAtMs: int64(this.clock.nowMs()),
        };
        await this.client.upsertEntity(entity, 'Replace', { abortSignal });
        return count + 1;
      });
    } catch (error) {
      throw toDomainError(error, 'recordStrike', 'write');
    }
  }
}
