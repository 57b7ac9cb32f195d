import { createHash } from 'node:crypto';
import type { TableClient } from '@azure/data-tables';
import { StoreUnavailableError, withDeadline } from 'azure-functions-idempotency';
import { classifyStoreError, toDomainError } from 'azure-functions-idempotency/table';
import { readRows } from './pointReads';

/** The identity index's partition of `marker` when it has `buckets` buckets. */
export function partitionIn(marker: string, buckets: number): string {
  const bucket = buckets <= 1 ? 0 : parseInt(createHash('sha256').update(marker).digest('hex').slice(0, 8), 16) % buckets;
  return `i-${bucket}`;
}

/** Default lifetime of an identity row, hence of a retired layout: the markers' default retention, 8 days. */
export const DEFAULT_LAYOUT_RETENTION_MS = 8 * 86_400_000;

const LAYOUT_PARTITION = 'i-layout';
const LAYOUT_ROW = 'layout';

interface Retired {
  readonly buckets: number;
  readonly retiredAtMs: number;
}

/**
 * The bucket counts the identity index was used with (one row, `i-layout` / `layout`, beside the buckets): the
 * current one and those retired less than a row's lifetime ago, whose partitions may still hold reservations. Raising
 * `identityBuckets` moves where an identity is written (`hash % buckets`); an identity reserved under the old count
 * must still be found, or a reuse under another customer would apply twice. Read once per index (per host), updated
 * with `If-Match` when this host's count is new. No row yet: the index was used with 1 bucket (the only count before
 * layouts were recorded).
 *
 * ```
 * day 0  buckets 1 -> row {1, retired []}
 * day 2  buckets 4 -> row {4, retired [1 @ day 2]}: identities looked for in i-<h%4> and i-0
 * day 10 (retention 8 d) -> retired [] : i-0's rows of the old layout are swept; only i-<h%4>
 * ```
 */
export class IdentityLayouts {
  private loaded: Promise<number[]> | undefined;

  constructor(
    private readonly client: TableClient,
    private readonly buckets: number,
    private readonly callTimeoutMs: number,
    private readonly retentionMs: number,
  ) {}

  /** The other bucket counts to look in (retired within retention), read or recorded on first use. @throws StoreUnavailableError, StoreRequestError */
  others(nowMs: number): Promise<number[]> {
    this.loaded ??= this.load(nowMs).catch((error: unknown) => {
      this.loaded = undefined;
      throw error;
    });
    return this.loaded;
  }

  private async load(nowMs: number): Promise<number[]> {
    for (let round = 0; round < 5; round++) {
      type Row = { buckets?: unknown; retired?: unknown };
      const row = (await readRows<Row>(this.client, LAYOUT_PARTITION, [LAYOUT_ROW], this.callTimeoutMs, 'readIdentityLayout')).get(LAYOUT_ROW);
      const current = row ? Number(row.buckets) : 1;
      const live = (r: Retired) => nowMs - r.retiredAtMs < this.retentionMs && r.buckets !== this.buckets;
      const retired = retiredOf(row?.retired).filter(live);
      if (row && current === this.buckets) return [...new Set(retired.map((r) => r.buckets))];
      const next = current === this.buckets ? retired : [{ buckets: current, retiredAtMs: nowMs }, ...retired.filter((r) => r.buckets !== current)];
      const entity = { partitionKey: LAYOUT_PARTITION, rowKey: LAYOUT_ROW, kind: 'identity-layout', buckets: this.buckets, retired: JSON.stringify(next) };
      try {
        await withDeadline(this.callTimeoutMs, 'writeIdentityLayout', 'write', (abortSignal) =>
          row ? this.client.updateEntity(entity, 'Replace', { etag: row.etag, abortSignal }) : this.client.createEntity(entity, { abortSignal }),
        );
        return [...new Set(next.map((r) => r.buckets))];
      } catch (error) {
        if (error instanceof StoreUnavailableError) throw error;
        if (classifyStoreError(error, 'writeIdentityLayout', 'write') === 'notFound') throw toDomainError(error, 'writeIdentityLayout', 'write');
        // Another host recorded its layout first: read again.
      }
    }
    throw new StoreUnavailableError('recording the identity index layout kept racing with other hosts', 'writeIdentityLayout');
  }
}

function retiredOf(text: unknown): Retired[] {
  try {
    const parsed = JSON.parse(typeof text === 'string' ? text : '[]') as unknown;
    return Array.isArray(parsed)
      ? parsed.filter((r): r is Retired => Number.isInteger((r as Retired)?.buckets) && Number.isFinite((r as Retired)?.retiredAtMs))
      : [];
  } catch {
    return [];
  }
}
