import { createHash } from 'node:crypto';
import type { TableClient, TableEntity, TransactionAction } from '@azure/data-tables';
import { systemClock, type Clock, DEFAULT_STORE_TIMEOUT_MS, withDeadline, StoreUnavailableError, scopedKeyString } from 'azure-functions-idempotency';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/table';
// Internal: int64/toNumber are the core's Table Int64 encoding, reused for this app's own rows (Table plumbing, not the package's API).
import { int64, toNumber } from 'azure-functions-idempotency/internal';
import { IdentityIndex } from './identityIndex';
import { needsRefresh, refreshMarkers } from './markerRefresh';
import { readRows } from './pointReads';
import type { RewardEvent } from './rewardEvent';

/** RowKey of a customer's balance row, beside its event markers in the customer's partition. */
const BALANCE_ROW = 'balance';
/** Events per transaction: their markers and the balance row, 100 operations (the service's limit). */
const CHUNK = 99;
/** Rounds of one chunk lost to other writers (another instance during a partition handover) before giving up (retryable). */
const MAX_ROUNDS = 20;

/** What applying a batch's events did. */
export interface BatchApplied {
  readonly applied: readonly RewardEvent[];
  readonly duplicates: readonly RewardEvent[];
  /**
   * The duplicates read again at the very place their marker records (partition and sequence number): a replay
   * from a checkpoint (host restart, partition move). The others are a producer's resends (another place).
   */
  readonly replays: readonly RewardEvent[];
  /** Events whose identity is held by another payload (a producer reused an event id, for this customer or another). */
  readonly keyReused: readonly RewardEvent[];
}

/** A customer partition as read: its balance and the markers asked for (marker -> digest and position). */
interface PartitionRows {
  balance: { points: number; etag: string } | undefined;
  markers: Map<string, { digest: string; position?: string; appliedAtMs: number }>;
}

type Results = { applied: RewardEvent[]; duplicates: RewardEvent[]; replays: RewardEvent[]; keyReused: RewardEvent[] };

/**
 * The rewards ledger on Table Storage: per customer, one partition (`c-<SHA-256 of the customer id>`)
 * holds the balance row and one marker row per applied event (`e-<SHA-256 of the event's scoped key>`);
 * the consumer's identity index (`IdentityIndex`, partitions `i-<bucket>`) holds one row per event identity.
 *
 * - **Identity is the consumer's**: an event's identity (CloudEvent `source` + `id`) is reserved for its payload
 *   in the index before its marker is written; another payload under that identity (any customer, any batch) is
 *   key reuse, never applied.
 * - **Marker and balance in one transaction**: the markers of the fresh events and the balance (`If-Match` on its
 *   ETag) commit in one entity-group transaction: an event is counted exactly when its marker exists; a
 *   duplicate's insert fails the whole transaction (nothing counted twice), and a concurrent writer's balance
 *   change fails it on the ETag. Either way the chunk is read again and retried.
 *
 * Round trips for a batch: one point read per event (its marker) and per customer and 99 events (the balance), never
 * a query (an "or" of RowKeys is a scan of the partition in Azure); fresh, + 1 transaction per customer and 99 events
 * + 1 per identity bucket touched (100 identities a transaction); replayed, nothing more (every marker found, nothing
 * to reserve). The cost per event does not depend on how many rows a partition holds. A hot customer's events all go through one partition
 * (2,000 entities/s) and one balance ETag: the hub's partition key should be the customer id.
 */
export class RewardsLedger {
  readonly identities: IdentityIndex;

  constructor(
    readonly client: TableClient,
    private readonly clock: Clock = systemClock,
    private readonly callTimeoutMs: number = DEFAULT_STORE_TIMEOUT_MS,
    options: { readonly identityBuckets?: number; readonly markerRetentionMs?: number } = {},
  ) {
    this.identities = new IdentityIndex(client, options.identityBuckets ?? 1, callTimeoutMs, options.markerRetentionMs);
  }

  /** The partition of a customer's balance and markers. */
  static partitionOf(customerId: string): string {
    return `c-${sha256(customerId).slice(0, 48)}`;
  }

  /** The marker RowKey of an event (also its identity row's RowKey). */
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
   * Applies a batch's events (in order; an identity seen twice counts once, with its first payload).
   * @throws StoreUnavailableError (retryable: nothing of a failed chunk was counted, a retry finds what was) or
   *   StoreRequestError.
   */
  async applyBatch(events: readonly RewardEvent[]): Promise<BatchApplied> {
    const result: Results = { applied: [], duplicates: [], replays: [], keyReused: [] };
    const seen = new Map<string, RewardEvent>();
    const byCustomer = new Map<string, RewardEvent[]>();
    for (const event of events) {
      const marker = RewardsLedger.markerOf(event);
      const earlier = seen.get(marker);
      if (earlier) (earlier.digest === event.digest ? result.duplicates : result.keyReused).push(event);
      else {
        seen.set(marker, event);
        byCustomer.set(event.customerId, [...(byCustomer.get(event.customerId) ?? []), event]);
      }
    }
    const chunks = [...byCustomer].flatMap(([customerId, list]) =>
      Array.from({ length: Math.ceil(list.length / CHUNK) }, (_, i) => ({ customerId, chunk: list.slice(i * CHUNK, (i + 1) * CHUNK) })),
    );
    // Every chunk read at once; then the identities of every event not on record, reserved at once.
    const reads = await Promise.all(
      chunks.map(({ customerId, chunk }) =>
        this.read(
          RewardsLedger.partitionOf(customerId),
          chunk.map((event) => RewardsLedger.markerOf(event)),
        ),
      ),
    );
    const unseen = chunks.flatMap(({ chunk }, i) => chunk.filter((event) => !reads[i].markers.has(RewardsLedger.markerOf(event))));
    const held = new Set<RewardEvent>();
    const reused = new Set<RewardEvent>();
    await this.reserve(unseen, held, reused);
    // One customer's chunks in order (each moves its balance), customers at once.
    const customers = [...byCustomer.keys()];
    await Promise.all(
      customers.map(async (customerId) => {
        let balance: PartitionRows['balance'] | null = null; // null: as read
        for (const [i, { chunk }] of chunks.entries()) {
          if (chunks[i].customerId !== customerId) continue;
          const first = reads[i];
          if (balance !== null) first.balance = balance;
          balance = await this.settleChunk(RewardsLedger.partitionOf(customerId), customerId, chunk, first, { held, reused }, result);
        }
      }),
    );
    return result;
  }

  private async reserve(events: readonly RewardEvent[], held: Set<RewardEvent>, reused: Set<RewardEvent>): Promise<void> {
    if (events.length === 0) return;
    const found = await this.identities.reserve(
      events.map((event) => ({ event, marker: RewardsLedger.markerOf(event) })),
      this.clock.nowMs(),
    );
    for (const event of found.held) held.add(event);
    for (const event of found.reused) reused.add(event);
  }

  /**
   * One chunk of one customer: the fresh events whose identity this payload holds are applied with the balance in
   * one transaction; read again and retried when another writer moved first.
   * @returns the balance after it (undefined when unknown: the next chunk reads it again).
   */
  private async settleChunk(
    partitionKey: string,
    customerId: string,
    chunk: readonly RewardEvent[],
    firstRead: PartitionRows,
    identities: { held: Set<RewardEvent>; reused: Set<RewardEvent> },
    result: Results,
  ): Promise<PartitionRows['balance']> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const rows =
        round === 0
          ? firstRead
          : await this.read(
              partitionKey,
              chunk.map((event) => RewardsLedger.markerOf(event)),
            );
      const fresh: RewardEvent[] = [];
      const refresh: RewardEvent[] = [];
      const settled: Results = { applied: [], duplicates: [], replays: [], keyReused: [] };
      for (const event of chunk) {
        const marker = rows.markers.get(RewardsLedger.markerOf(event));
        if (marker === undefined) fresh.push(event);
        else if (marker.digest !== event.digest) settled.keyReused.push(event);
        else {
          settled.duplicates.push(event);
          if (needsRefresh(marker.appliedAtMs, event.enqueuedAtMs)) refresh.push(event);
          if (event.position && marker.position === positionText(event)) settled.replays.push(event);
        }
      }
      await this.reserve(
        fresh.filter((event) => !identities.held.has(event) && !identities.reused.has(event)),
        identities.held,
        identities.reused,
      );
      const applying = fresh.filter((event) => identities.held.has(event));
      settled.keyReused.push(...fresh.filter((event) => identities.reused.has(event)));
      // A copy enqueued well after its marker was written carries the marker (and its identity row) forward.
      const copies = refresh.map((event) => ({ marker: RewardsLedger.markerOf(event), enqueuedAtMs: event.enqueuedAtMs ?? 0 }));
      await refreshMarkers(this.client, partitionKey, copies, this.identities, this.callTimeoutMs);
      const settle = () => {
        for (const name of ['duplicates', 'replays', 'keyReused'] as const) result[name].push(...settled[name]);
      };
      const before = rows.balance?.points ?? 0;
      if (applying.length === 0) {
        settle();
        return rows.balance;
      }
      const after = before + applying.reduce((sum, event) => sum + event.points, 0);
      const now = this.clock.nowMs();
      const balance: TableEntity = { partitionKey, rowKey: BALANCE_ROW, kind: 'reward-balance', customerId, points: int64(after), updatedAtMs: int64(now) };
      const actions: TransactionAction[] = [
        ...applying.map((event): TransactionAction => ['create', this.markerEntity(partitionKey, event, now)]),
        rows.balance ? ['update', balance, 'Merge', { etag: rows.balance.etag }] : ['create', balance],
      ];
      try {
        const response = await withDeadline(this.callTimeoutMs, 'applyRewards', 'write', (abortSignal) =>
          this.client.submitTransaction(actions, { abortSignal }),
        );
        result.applied.push(...applying);
        settle();
        const etag = response.subResponses.find((sub) => sub.rowKey === BALANCE_ROW)?.etag;
        return etag ? { points: after, etag } : undefined;
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

  /**
   * The balance row and the markers among `markers` (marker -> digest and position): point reads, one row each
   * (`readRows`), so the cost is one request and one row per event whatever the customer's partition holds.
   */
  private async read(partitionKey: string, markers: readonly string[]): Promise<PartitionRows> {
    type Row = { points?: unknown; digest?: unknown; position?: unknown; appliedAtMs?: unknown };
    const rows = await readRows<Row>(this.client, partitionKey, [BALANCE_ROW, ...markers], this.callTimeoutMs, 'readRewards');
    const found: PartitionRows = { balance: undefined, markers: new Map() };
    for (const [rowKey, row] of rows) {
      if (rowKey === BALANCE_ROW) found.balance = { points: toNumber(row.points), etag: String(row.etag) };
      else
        found.markers.set(rowKey, {
          digest: String(row.digest),
          position: typeof row.position === 'string' ? row.position : undefined,
          appliedAtMs: toNumber(row.appliedAtMs),
        });
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
