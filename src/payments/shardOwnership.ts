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
  const { layout } = options;
  if (layout.count === 1) return { checked: 0, requests: 0, strays: [] };
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
      if (owner !== layout.index && strays.length < maxStrays) strays.push({ paymentId: marker.key, owner, status: marker.status });
    }
    if (strays.length >= maxStrays) break;
  }
  return { checked, requests, strays };
}
