import type { TableClient } from '@azure/data-tables';
import type { Clock } from '../../../protocol/clock';
import { StoreRequestError } from '../../../protocol/errors';
import type { IdempotencyKey } from '../../../protocol/keys';
import { tableAddress } from '../partitions';
import { classifyStoreError, toDomainError } from '../storeErrors';
import { int64, toNumber } from '../tableRows';

/**
 * Keys whose records must be kept: an {@link ExpirySweeper} given this source (option `holds`) deletes none of
 * their records, whatever their age, and moves their retention forward.
 *
 * A message that may still come back long after retention (e.g. dead-lettered, and an operator may resubmit it)
 * needs its record (and its outcome) to be there, or the resubmission is claimed afresh and its work runs a second
 * time. Each sweep run first reads the held keys from every source, then deletes.
 *
 * @example
 * ```ts
 * const held: HeldKeysSource = { name: 'orders dead-letter queue', heldKeys: async () => (await peekAll()).map((m) => keyFromMessageId('orders', m.messageId)) };
 * ```
 */
export interface HeldKeysSource {
  /** For logs and errors, e.g. `payments dead-letter queue`. */
  readonly name: string;
  /**
   * Every key whose message is held, or a throw: a partial list would let the run delete a held record, so a source
   * that cannot read all of it must fail the run (nothing is deleted; the next tick tries again).
   */
  heldKeys(): Promise<readonly IdempotencyKey[]>;
}

/** What the hold pass of one run did (internal; the run's {@link SweepReport} carries these counts). */
export interface HoldCounts {
  /** Keys the sources listed (a key listed twice counts once). */
  held: number;
  /** Held keys that had a record. */
  heldWithRecord: number;
  /** Records whose retention this run moved forward. */
  extended: number;
  /** Storage requests of the pass (point reads and conditional updates). */
  requests: number;
}

/** Where a held record is, as the sweep's deletes see it: `PartitionKey` + `\n` + `RowKey`. */
export type HeldAddress = string;

const MAX_ATTEMPTS = 5;

/**
 * The hold pass of a sweep run: reads the held keys of every source, then for each held record whose retention
 * ends within `holdMs` of now, moves it to now + 2 x `holdMs` (one `If-Match` merge of `retentionExpiresAtMs`;
 * 412 -> re-read and decide again). A held record therefore always has at least `holdMs` to live when a run ends,
 * and is written once per `holdMs`, not on every run. `holdMs` is the redelivery window of a resubmitted copy
 * (how long a resubmitted copy can take to be delivered): a copy resubmitted just after a run is delivered within it.
 * A record the store itself would call expired is extended too (a resubmission must find it alive, not take it
 * over as a new lifetime). Nothing else changes: status, lease, result and attempt stay as they are.
 * @returns the held addresses (the run deletes none of them) and the pass's counts.
 * @throws Error of a source (the run fails before deleting anything); StoreUnavailableError / StoreRequestError.
 */
export async function holdRecords(
  client: TableClient,
  sources: readonly HeldKeysSource[],
  options: { readonly partitionCount: number; readonly holdMs: number; readonly clock: Clock },
): Promise<{ addresses: ReadonlySet<HeldAddress>; counts: HoldCounts }> {
  const addresses = new Set<HeldAddress>();
  for (const source of sources) {
    for (const key of await source.heldKeys()) {
      const { partitionKey, rowKey } = tableAddress(key, options.partitionCount);
      addresses.add(`${partitionKey}\n${rowKey}`);
    }
  }
  const counts: HoldCounts = { held: addresses.size, heldWithRecord: 0, extended: 0, requests: 0 };
  for (const address of addresses) {
    const [partitionKey, rowKey] = address.split('\n');
    await holdOne(client, partitionKey, rowKey, options, counts);
  }
  return { addresses, counts };
}

async function holdOne(
  client: TableClient,
  partitionKey: string,
  rowKey: string,
  options: { readonly holdMs: number; readonly clock: Clock },
  counts: HoldCounts,
): Promise<void> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    counts.requests++;
    let row: { etag: string; retentionExpiresAtMs: number } | undefined;
    try {
      const entity = await client.getEntity<Record<string, unknown>>(partitionKey, rowKey, { queryOptions: { select: ['retentionExpiresAtMs'] } });
      row = { etag: String(entity.etag), retentionExpiresAtMs: toNumber(entity.retentionExpiresAtMs) };
    } catch (error) {
      if (classifyStoreError(error, 'expirySweep.hold.read', 'read') === 'notFound') return;
      throw toDomainError(error, 'expirySweep.hold.read', 'read');
    }
    if (attempt === 1) counts.heldWithRecord++;
    const nowMs = options.clock.nowMs();
    if (row.retentionExpiresAtMs - nowMs >= options.holdMs) return;
    counts.requests++;
    try {
      await client.updateEntity({ partitionKey, rowKey, retentionExpiresAtMs: int64(nowMs + 2 * options.holdMs) }, 'Merge', { etag: row.etag });
      counts.extended++;
      return;
    } catch (error) {
      const conflict = classifyStoreError(error, 'expirySweep.hold.extend', 'write');
      if (conflict === 'notFound') return;
      if (conflict !== 'conditionFailed') throw toDomainError(error, 'expirySweep.hold.extend', 'write');
    }
  }
  throw new StoreRequestError(
    `expiry sweep: the held record ${partitionKey}/${rowKey} kept changing; ${MAX_ATTEMPTS} tries to extend its retention failed`,
    'expirySweep.hold.extend',
    412,
  );
}
