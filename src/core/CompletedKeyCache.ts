import type { Clock } from './clock';
import { ConfigurationError } from './errors';
import { copyRecord, type IdempotencyRecord } from './record';

/**
 * A bounded, in-process LRU cache of *completed* records, so a hot duplicate costs no round
 * trip. Only completed records enter it: they are immutable until their retention ends, so a
 * cached answer is never stale. In-progress records are never cached (their state changes).
 * It keeps its own copy and answers with a fresh copy each time, as a read from the table would:
 * a caller that changes a replayed result changes nothing stored.
 */
export class CompletedKeyCache {
  private readonly entries = new Map<string, IdempotencyRecord>();

  constructor(
    readonly maxEntries: number,
    private readonly clock: Clock,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new ConfigurationError(`cache size must be a positive integer, got ${maxEntries}`);
  }

  /** The completed record for `scopedKey`, or undefined (absent or past its retention). */
  get(scopedKey: string): IdempotencyRecord | undefined {
    const record = this.entries.get(scopedKey);
    if (!record) return undefined;
    this.entries.delete(scopedKey);
    if (record.retentionExpiresAtMs <= this.clock.nowMs()) return undefined;
    this.entries.set(scopedKey, record); // most recently used last
    return copyRecord(record);
  }

  /** Remembers a completed record; other statuses are ignored. */
  put(scopedKey: string, record: IdempotencyRecord): void {
    if (record.status !== 'COMPLETED') return;
    this.entries.delete(scopedKey);
    this.entries.set(scopedKey, copyRecord(record));
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
