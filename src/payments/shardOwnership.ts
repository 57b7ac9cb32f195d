import type { TableClient } from '@azure/data-tables';
import { liveMarkerSample } from '../lifecycle/lapsedRecords';
import { PAYMENTS_CONSUMER } from './PaymentsConsumer';
import { shardOf, type ShardLayout } from './shards';

/**
 * Whether this shard's table holds payment records another shard owns (docs/DESIGN.md "Past one task hub": a change
 * of N is a record migration, `npm run payments:reshard`; an app whose table holds a live record of another shard runs
 * a layout the records were not migrated to, and refuses it).
 *
 * Bounded: one query per partition (the payments markers still in their retention, a page of at most `perPartition`),
 * so a check costs `IDEMPOTENCY_PARTITION_COUNT` requests whatever the table holds. A change of N without the
 * migration leaves most records of every old shard on the wrong one (2 -> 3: a record stays only when both counts give
 * the same shard, about a third): the first page of any partition that holds payments finds one. A table left partly
 * migrated (an apply cut short) is what the tool's plan finds: its last step (0 move on every shard) is the full check.
 */

/** A payment record the check found on a shard that does not own it. */
export interface StrayRecord {
  readonly paymentId: string;
  /** The shard that owns it under this layout. */
  readonly owner: number;
  readonly status: string;
  /** The shard whose table holds it, when another shard's (the cross check of an empty table); else this shard's. */
  readonly foundOn?: number;
}

/** What one check read and found. */
export interface OwnershipReport {
  /** Payment records read (live ones, at most `perPartition` a partition). */
  readonly checked: number;
  /** Requests made. */
  readonly requests: number;
  /** Records another shard owns, the first `maxStrays`. */
  readonly strays: readonly StrayRecord[];
}

export interface OwnershipCheckOptions {
  readonly layout: Pick<ShardLayout, 'count' | 'index'>;
  readonly partitionCount: number;
  readonly nowMs: number;
  /** Records read a partition at most (default 100: one page). */
  readonly perPartition?: number;
  /** Strays kept for the report (default 5). */
  readonly maxStrays?: number;
  /** Deadline of each request, SDK retries included. */
  readonly callTimeoutMs: number;
}

/**
 * Reads the first page of live payments markers of each partition of `client`'s table and returns those shard
 * `layout.index` does not own. N = 1: nothing to check (every key is shard 0's), no request.
 * An empty page with a continuation (Azure answers so when a filtered scan hits its limit) is followed, at most 3
 * requests a partition (`liveMarkerSample`).
 * @throws StoreUnavailableError, StoreRequestError (the table does not answer: the caller decides nothing)
 */
export async function strayPaymentRecords(client: TableClient, options: OwnershipCheckOptions): Promise<OwnershipReport> {
  if (options.layout.count === 1) return { checked: 0, requests: 0, strays: [] };
  return sampled(client, options, (owner) => owner !== options.layout.index);
}

/** Another shard's table, as the cross check reads it. */
export interface OtherShardTable {
  readonly shard: number;
  readonly client: TableClient;
}

/**
 * {@link strayPaymentRecords} of this shard's table and, when that table holds no live payment record at all (a new
 * shard, or one that never claimed: nothing in it can show a layout change), the same bounded sample of each other
 * shard's table (`others`, from `PAYMENT_SHARD_TABLE_ENDPOINTS`), looking for records THIS shard owns: after a change of
 * N made without the migration they are still on their old shard, and this shard would claim a late copy of one afresh.
 * A shard whose table holds records needs no cross check: its own sample finds the records that moved away (a
 * correctly migrated table holds only its own). Cost: `IDEMPOTENCY_PARTITION_COUNT` requests, plus as many per other
 * shard while the table is empty; once a process, like the own check.
 * @throws StoreUnavailableError, StoreRequestError
 */
export async function misplacedPaymentRecords(
  client: TableClient,
  others: readonly OtherShardTable[],
  options: OwnershipCheckOptions,
): Promise<OwnershipReport> {
  const own = await strayPaymentRecords(client, options);
  if (own.strays.length > 0 || own.checked > 0 || options.layout.count === 1) return own;
  let { checked, requests } = own;
  const strays: StrayRecord[] = [];
  for (const other of others) {
    if (other.shard === options.layout.index) continue;
    const report = await sampled(other.client, options, (owner) => owner === options.layout.index, other.shard);
    checked += report.checked;
    requests += report.requests;
    strays.push(...report.strays);
    if (strays.length >= (options.maxStrays ?? 5)) break;
  }
  return { checked, requests, strays: strays.slice(0, options.maxStrays ?? 5) };
}

async function sampled(client: TableClient, options: OwnershipCheckOptions, wrong: (owner: number) => boolean, foundOn?: number): Promise<OwnershipReport> {
  const { layout } = options;
  const maxStrays = options.maxStrays ?? 5;
  const strays: StrayRecord[] = [];
  let checked = 0;
  let requests = 0;
  const sample = liveMarkerSample(client, { ...options, consumer: PAYMENTS_CONSUMER, perPartition: options.perPartition ?? 100 });
  for await (const partition of sample) {
    requests += partition.requests;
    for (const marker of partition.markers) {
      checked++;
      const owner = shardOf(marker.key, layout.count);
      if (wrong(owner) && strays.length < maxStrays)
        strays.push({ paymentId: marker.key, owner, status: marker.status, ...(foundOn === undefined ? {} : { foundOn }) });
    }
    if (strays.length >= maxStrays) break;
  }
  return { checked, requests, strays };
}
