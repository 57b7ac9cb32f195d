import { createHash } from 'node:crypto';
import type { TableClient, TableEntity, TransactionAction } from '@azure/data-tables';
import { systemClock, type Clock } from '../core/clock';
import { DEFAULT_STORE_TIMEOUT_MS, withDeadline } from '../core/deadline';
import { StoreUnavailableError } from '../core/errors';
import { scopedKeyString } from '../core/keys';
import { classifyStoreError, toDomainError } from '../core/storeErrors';
import { int64, toNumber } from '../core/tableRows';
import type { RewardEvent } from './rewardEvent';

/** RowKey of a customer's balance row, beside its event markers in the customer's partition. */
const BALANCE_ROW = 'balance';
/** Events per query and transaction: the query filter holds 15 comparisons (PartitionKey, balance, 13 markers). */
const CHUNK = 13;
/** Rounds of one chunk lost to other writers (another instance during a partition handover) before giving up (retryable). */
const MAX_ROUNDS = 20;

/** What applying one customer's events did. */
export interface CustomerApplied {
  readonly applied: readonly RewardEvent[];
  readonly duplicates: readonly RewardEvent[];
  /**
   * The duplicates read again at the very place their marker records (partition and sequence number): a replay
   * from a checkpoint (host restart, partition move). The others are a producer's resends (another place).
   */
  readonly replays: readonly RewardEvent[];
  /** Events whose key is on record with another digest (a producer reused an event id). */
  readonly keyReused: readonly RewardEvent[];
  readonly balance: number;
}

/**
 * The rewards ledger on Table Storage: per customer, one partition (`c-<SHA-256 of the customer id>`)
 * holds the balance row and one marker row per applied event (`e-<SHA-256 of the event's scoped key>`).
 * Because marker and balance share the partition, **one entity-group transaction** inserts the markers
 * of the fresh events and moves the balance (`If-Match` on its ETag): an event is counted exactly when
 * its marker exists; a duplicate's insert fails the whole transaction (nothing counted twice), and a
 * concurrent writer's balance change fails it on the ETag. Either way the chunk is read again and retried.
 *
 * Round trips per customer and 13 events: fresh 2 (one query for the balance and the markers, one
 * transaction); replayed 1 (the query finds every marker). A hot customer's events all go through one
 * partition (2,000 entities/s) and one balance ETag: instances writing the same customer at once (a
 * partition handover) retry on each other's writes; the hub's partition key should be the customer id so
 * that one instance owns a customer's events at a time.
 */
export class RewardsLedger {
  constructor(
    readonly client: TableClient,
    private readonly clock: Clock = systemClock,
    private readonly callTimeoutMs: number = DEFAULT_STORE_TIMEOUT_MS,
  ) {}

  /** The partition of a customer's balance and markers. */
  static partitionOf(customerId: string): string {
    return `c-${sha256(customerId).slice(0, 48)}`;
  }

  /** The marker RowKey of an event. */
  static markerOf(event: Pick<RewardEvent, 'key'>): string {
    return `e-${sha256(scopedKeyString(event.key))}`;
  }

  async ensureTable(): Promise<void> {
    try {
      await withDeadline(this.callTimeoutMs, 'createTable', 'write', (abortSignal) => this.client.createTable({ abortSignal }));
    } catch (error) {
      throw toDomainError(error, 'createTable', 'write');
    }
  }

  /** A customer's balance (0 when none). @throws StoreUnavailableError, StoreRequestError */
  async balanceOf(customerId: string): Promise<number> {
    const rows = await this.read(RewardsLedger.partitionOf(customerId), []);
    return rows.balance?.points ?? 0;
  }

  /**
   * Applies one customer's events (in order; a key seen twice counts once). @throws StoreUnavailableError
   * (retryable: nothing of the failed chunk was counted, a retry finds what was) or StoreRequestError.
   */
  async apply(customerId: string, events: readonly RewardEvent[]): Promise<CustomerApplied> {
    const partitionKey = RewardsLedger.partitionOf(customerId);
    const result = { applied: [] as RewardEvent[], duplicates: [] as RewardEvent[], replays: [] as RewardEvent[], keyReused: [] as RewardEvent[], balance: 0 };
    const seen = new Map<string, RewardEvent>();
    const unique: RewardEvent[] = [];
    for (const event of events) {
      const marker = RewardsLedger.markerOf(event);
      const earlier = seen.get(marker);
      if (earlier) (earlier.digest === event.digest ? result.duplicates : result.keyReused).push(event);
      else {
        seen.set(marker, event);
        unique.push(event);
      }
    }
    if (unique.length === 0) result.balance = (await this.read(partitionKey, [])).balance?.points ?? 0;
    for (let i = 0; i < unique.length; i += CHUNK) result.balance = await this.applyChunk(partitionKey, customerId, unique.slice(i, i + CHUNK), result);
    return result;
  }

  private async applyChunk(
    partitionKey: string,
    customerId: string,
    chunk: readonly RewardEvent[],
    result: { applied: RewardEvent[]; duplicates: RewardEvent[]; replays: RewardEvent[]; keyReused: RewardEvent[] },
  ): Promise<number> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const rows = await this.read(
        partitionKey,
        chunk.map((event) => RewardsLedger.markerOf(event)),
      );
      const fresh: RewardEvent[] = [];
      const duplicates: RewardEvent[] = [];
      const replays: RewardEvent[] = [];
      const keyReused: RewardEvent[] = [];
      for (const event of chunk) {
        const marker = rows.markers.get(RewardsLedger.markerOf(event));
        if (marker === undefined) fresh.push(event);
        else if (marker.digest !== event.digest) keyReused.push(event);
        else {
          duplicates.push(event);
          if (event.position && marker.position === positionText(event)) replays.push(event);
        }
      }
      const settled = () => {
        result.duplicates.push(...duplicates);
        result.replays.push(...replays);
        result.keyReused.push(...keyReused);
      };
      const before = rows.balance?.points ?? 0;
      if (fresh.length === 0) {
        settled();
        return before;
      }
      const after = before + fresh.reduce((sum, event) => sum + event.points, 0);
      const now = this.clock.nowMs();
      const balance: TableEntity = { partitionKey, rowKey: BALANCE_ROW, kind: 'reward-balance', customerId, points: int64(after), updatedAtMs: int64(now) };
      const actions: TransactionAction[] = [
        ...fresh.map((event): TransactionAction => ['create', this.markerEntity(partitionKey, event, now)]),
        rows.balance ? ['update', balance, 'Merge', { etag: rows.balance.etag }] : ['create', balance],
      ];
      try {
        await withDeadline(this.callTimeoutMs, 'applyRewards', 'write', (abortSignal) => this.client.submitTransaction(actions, { abortSignal }));
        result.applied.push(...fresh);
        settled();
        return after;
      } catch (error) {
        if (error instanceof StoreUnavailableError) throw error;
        classifyStoreError(error, 'applyRewards', 'write'); // throws unless a conflict: another writer moved first
      }
    }
    throw new StoreUnavailableError(`rewards of one customer kept racing with other writers (${MAX_ROUNDS} rounds); retry later`, 'applyRewards');
  }

  private markerEntity(partitionKey: string, event: RewardEvent, nowMs: number): TableEntity {
    return {
      partitionKey,
      rowKey: RewardsLedger.markerOf(event),
      kind: 'reward-event',
      consumer: event.key.consumer,
      eventKey: event.key.key,
      paymentId: event.paymentId,
      digest: event.digest,
      // Where it was applied from: a later copy at the same place is a replay, at another a producer's resend.
      ...(event.position ? { position: positionText(event) } : {}),
      points: int64(event.points),
      appliedAtMs: int64(nowMs),
    };
  }

  /** The balance row and the markers among `markers` (marker -> digest and position), in one query. */
  private async read(partitionKey: string, markers: readonly string[]) {
    const filter = [BALANCE_ROW, ...markers].map((rowKey) => `RowKey eq '${rowKey}'`).join(' or ');
    const found = { balance: undefined as { points: number; etag: string } | undefined, markers: new Map<string, { digest: string; position?: string }>() };
    try {
      await withDeadline(this.callTimeoutMs, 'readRewards', 'read', async (abortSignal) => {
        const query = { filter: `PartitionKey eq '${partitionKey}' and (${filter})` };
        for await (const row of this.client.listEntities<Record<string, unknown>>({ queryOptions: query, abortSignal })) {
          if (row.rowKey === BALANCE_ROW) found.balance = { points: toNumber(row.points), etag: String(row.etag) };
          else found.markers.set(String(row.rowKey), { digest: String(row.digest), position: typeof row.position === 'string' ? row.position : undefined });
        }
      });
    } catch (error) {
      throw toDomainError(error, 'readRewards', 'read');
    }
    return found;
  }
}

/** An event's place as its marker stores it (`<partition>/<sequence number>`); undefined when unknown. */
function positionText(event: RewardEvent): string | undefined {
  return event.position ? `${event.position.partitionId}/${event.position.sequenceNumber}` : undefined;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
