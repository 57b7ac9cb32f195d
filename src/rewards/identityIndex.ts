import type { TableClient, TableEntity, TransactionAction } from '@azure/data-tables';
import { DEFAULT_STORE_TIMEOUT_MS, withDeadline, StoreUnavailableError } from 'azure-functions-idempotency';
import { classifyStoreError } from 'azure-functions-idempotency/table';
// Internal: int64 is the core's Table Int64 encoding, reused for this app's own rows (Table plumbing, not the package's API).
import { int64 } from 'azure-functions-idempotency/internal';
import { DEFAULT_LAYOUT_RETENTION_MS, IdentityLayouts, partitionIn } from './identityLayouts';
import { readRows } from './pointReads';
import type { RewardEvent } from './rewardEvent';

/** Rows per entity-group transaction (the service's limit). */
const TRANSACTION_ROWS = 100;
/** Rounds lost to other writers (reserving the same identities at once) before giving up (retryable). */
const MAX_ROUNDS = 20;

/** What reserving a batch's identities found: those this payload holds, those another payload holds. */
export interface Reserved {
  readonly held: ReadonlySet<RewardEvent>;
  readonly reused: ReadonlySet<RewardEvent>;
}

/**
 * The consumer's identity index: one row per CloudEvent identity (`source` + `id`) the consumer ever took, in
 * partitions of their own (`i-<bucket>`), beside the customers' partitions. The first payload that reserves an
 * identity holds it for good (until the row expires); another payload under the same identity, for any customer,
 * in this batch or a later one, is refused (key reuse). A reserved identity whose customer transaction has not run
 * yet (a crash in between) is taken again by the same payload on the replay: reserving is idempotent per payload.
 *
 * Why a row of its own: a Table transaction holds one partition, and the customer's partition (balance and markers,
 * one transaction) cannot also hold every identity of the consumer. The reservation comes first; the marker and the
 * balance still change in one transaction: so an identity is applied at most once (one payload holds it, and that
 * payload's marker is written with the balance change, exactly once).
 *
 * Cost: one transaction per bucket touched by a batch's new events (100 rows each); a replayed batch reserves nothing
 * (its markers are found first). A bucket is one partition (about 2,000 rows a second): raise `buckets` with the
 * hub's throughput units.
 */
export class IdentityIndex {
  private readonly layouts: IdentityLayouts;

  /** `retentionMs`: how long an identity row lives (the markers' retention): a layout older than that holds nothing. */
  constructor(
    readonly client: TableClient,
    private readonly buckets: number = 1,
    private readonly callTimeoutMs: number = DEFAULT_STORE_TIMEOUT_MS,
    retentionMs: number = DEFAULT_LAYOUT_RETENTION_MS,
  ) {
    this.layouts = new IdentityLayouts(client, buckets, callTimeoutMs, retentionMs);
  }

  /** The partition of an event's identity row. */
  partitionOf(marker: string): string {
    return partitionIn(marker, this.buckets);
  }

  /**
   * Reserves the identities of `events` (distinct markers) for their payloads, written at `nowMs`.
   * @throws StoreUnavailableError (retryable: a retry finds its own reservations) or StoreRequestError.
   */
  async reserve(events: ReadonlyArray<{ event: RewardEvent; marker: string }>, nowMs: number): Promise<Reserved> {
    const held = new Set<RewardEvent>();
    const reused = new Set<RewardEvent>();
    const fresh = await this.notInOtherLayouts(events, nowMs, held, reused);
    const groups = new Map<string, Array<{ event: RewardEvent; marker: string }>>();
    for (const item of fresh) groups.set(this.partitionOf(item.marker), [...(groups.get(this.partitionOf(item.marker)) ?? []), item]);
    const tasks = [...groups].flatMap(([partitionKey, items]) => chunks(items, TRANSACTION_ROWS).map((chunk) => ({ partitionKey, chunk })));
    await Promise.all(
      tasks.map(async ({ partitionKey, chunk }) => {
        let pending = chunk;
        for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
          if (await this.insert(partitionKey, pending, nowMs)) {
            for (const { event } of pending) held.add(event);
            return;
          }
          const found = await this.read(
            partitionKey,
            pending.map((item) => item.marker),
          );
          const absent = [];
          for (const item of pending) {
            const digest = found.get(item.marker);
            if (digest === undefined) absent.push(item);
            else (digest === item.event.digest ? held : reused).add(item.event);
          }
          pending = absent;
        }
        if (pending.length > 0)
          throw new StoreUnavailableError(`reserving event identities kept racing with other writers (${MAX_ROUNDS} rounds)`, 'reserveIdentity');
      }),
    );
    return { held, reused };
  }

  /**
   * The events whose identity no other layout still within retention holds; the others are decided here (held: the
   * same payload; reused: another). A point read per event and other layout (none while the count never changed).
   */
  private async notInOtherLayouts(
    events: ReadonlyArray<{ event: RewardEvent; marker: string }>,
    nowMs: number,
    held: Set<RewardEvent>,
    reused: Set<RewardEvent>,
  ): Promise<Array<{ event: RewardEvent; marker: string }>> {
    const others = await this.layouts.others(nowMs);
    if (others.length === 0 || events.length === 0) return [...events];
    const wanted = new Map<string, string[]>();
    for (const { marker } of events)
      for (const buckets of others) {
        const partition = partitionIn(marker, buckets);
        if (partition !== this.partitionOf(marker)) wanted.set(partition, [...(wanted.get(partition) ?? []), marker]);
      }
    const found = new Map<string, string>();
    await Promise.all([...wanted].map(async ([partition, markers]) => (await this.read(partition, [...new Set(markers)])).forEach((d, m) => found.set(m, d))));
    return events.filter(({ event, marker }) => {
      const digest = found.get(marker);
      if (digest !== undefined) (digest === event.digest ? held : reused).add(event);
      return digest === undefined;
    });
  }

  /** One transaction creating the rows; false when one of them exists (the whole transaction failed). */
  private async insert(partitionKey: string, items: ReadonlyArray<{ event: RewardEvent; marker: string }>, nowMs: number): Promise<boolean> {
    const actions = items.map(({ event, marker }): TransactionAction => {
      const row: TableEntity = {
        partitionKey,
        rowKey: marker,
        kind: 'reward-identity',
        eventKey: event.key.key,
        digest: event.digest,
        customerId: event.customerId,
        appliedAtMs: int64(nowMs),
      };
      return ['create', row];
    });
    try {
      await withDeadline(this.callTimeoutMs, 'reserveIdentity', 'write', (abortSignal) => this.client.submitTransaction(actions, { abortSignal }));
      return true;
    } catch (error) {
      if (error instanceof StoreUnavailableError) throw error;
      classifyStoreError(error, 'reserveIdentity', 'write'); // throws unless a conflict: an identity is on record
      return false;
    }
  }

  /** The digests on record for `markers` (marker -> digest): point reads, one row each (`readRows`). */
  private async read(partitionKey: string, markers: readonly string[]): Promise<Map<string, string>> {
    const rows = await readRows<{ digest?: unknown }>(this.client, partitionKey, markers, this.callTimeoutMs, 'readIdentity');
    return new Map([...rows].map(([rowKey, row]) => [rowKey, String(row.digest)]));
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
