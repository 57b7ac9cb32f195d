import { createHash } from 'node:crypto';
import type { TableClient } from '@azure/data-tables';
import { systemClock, type Clock, DEFAULT_STORE_TIMEOUT_MS, withDeadline } from 'azure-functions-idempotency';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/table';
import { strikesPartitionOf } from './failureStrikes';

/** One invocation's hold on a batch: what earlier invocations of the same batch left, and how to mark its own progress. */
export interface OpenAttempt {
  /** Earlier invocations of this batch (same partition, same first sequence number) that ended without an answer. */
  readonly unanswered: number;
  /** The event an earlier invocation, running the batch event by event, was on when it ended without an answer. */
  readonly diedAt?: number;
  /** Records that this invocation is now on event `index` (only while it runs the batch event by event). */
  progress(index: number): Promise<void>;
  /** Records that this invocation answered (returned or threw): a replay of the batch is then not a strike. */
  answered(): Promise<void>;
}

interface Row {
  place?: unknown;
  unanswered?: unknown;
  answered?: unknown;
  eventIndex?: unknown;
}

/**
 * Notices a stream batch whose invocation ended without an answer: a function timeout (the host cancels it, the
 * batch is not checkpointed and runs again) or a worker crash. Neither throws in the function, so neither reaches
 * `FailureStrikes`: without this, a batch that always times out is retried forever in silence.
 *
 * One row per consumer and hub partition (partition `strikes-<consumer>` of the parking table, RowKey
 * `open-<SHA-256 of the partition id>`), holding where the batch in hand starts and whether its invocation answered:
 *
 * ```
 * invocation 1  open(place P) -> row {P, answered: false}   ...timeout: nothing more written
 * invocation 2  open(place P) -> P again, not answered: unanswered 1 (a strike)
 * invocation k  open(place P) -> unanswered = k - 1; at maxStrikes the batch is run event by event, progress(i) before each
 * invocation k+1 open(place P) -> diedAt = i: that event is parked repeated-failure, the others applied
 * answered()   -> {P, answered: true}: a replay from the same checkpoint (a crash after the function returned) is not a strike
 * ```
 * Cost: a point read and a write when a batch opens, a write when it answers (3 requests a batch, nothing per event
 * but while isolating). Rows are swept with the strike rows (`lastAtMs`, `sweepFailureStrikes`).
 */
export class BatchAttempts {
  constructor(
    readonly client: TableClient,
    private readonly clock: Clock = systemClock,
    private readonly callTimeoutMs: number = DEFAULT_STORE_TIMEOUT_MS,
  ) {}

  /**
   * Opens the batch starting at `place` in hub partition `partitionId`.
   * @throws StoreUnavailableError or StoreRequestError (the batch throws: it runs again).
   */
  async open(consumer: string, partitionId: string, place: string): Promise<OpenAttempt> {
    const partitionKey = strikesPartitionOf(consumer);
    const rowKey = `open-${createHash('sha256').update(partitionId).digest('hex')}`;
    const earlier = await this.read(partitionKey, rowKey);
    const again = earlier !== undefined && earlier.place === place && earlier.answered !== true;
    const unanswered = again ? Number(earlier.unanswered) + 1 : 0;
    const lastIndex = again && typeof earlier.eventIndex === 'number' ? earlier.eventIndex : -1;
    const write = (fields: { answered: boolean; eventIndex: number }) =>
      this.write({ partitionKey, rowKey, place: place.slice(0, 1000), unanswered, ...fields, lastAtMs: int64(this.clock.nowMs()) });
    await write({ answered: false, eventIndex: lastIndex });
    return {
      unanswered,
      diedAt: lastIndex >= 0 ? lastIndex : undefined,
      progress: (index) => write({ answered: false, eventIndex: index }),
      answered: () => write({ answered: true, eventIndex: -1 }),
    };
  }

  private async read(partitionKey: string, rowKey: string): Promise<Row | undefined> {
    try {
      return await withDeadline(this.callTimeoutMs, 'readBatchAttempt', 'read', (abortSignal) =>
        this.client.getEntity<Row>(partitionKey, rowKey, { abortSignal }),
      );
    } catch (error) {
      if (classifyStoreError(error, 'readBatchAttempt', 'read') !== 'notFound') throw toDomainError(error, 'readBatchAttempt', 'read');
      return undefined;
    }
  }

  private async write(entity: { partitionKey: string; rowKey: string } & Record<string, unknown>): Promise<void> {
    try {
      await withDeadline(this.callTimeoutMs, 'writeBatchAttempt', 'write', (abortSignal) => this.client.upsertEntity(entity, 'Replace', { abortSignal }));
    } catch (error) {
      throw toDomainError(error, 'writeBatchAttempt', 'write');
    }
  }
}

/** An Int64 property (`sweepFailureStrikes` compares `lastAtMs` with an Int64 literal). */
function int64(value: number): { value: string; type: 'Int64' } {
  return { value: String(Math.trunc(value)), type: 'Int64' };
}
