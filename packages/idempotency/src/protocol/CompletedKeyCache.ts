import type { Clock } from './clock';
import { ConfigurationError } from './errors';
import { copyRecord, RecordStatus, type IdempotencyRecord } from './record';

/**
 * Which completed records may be cached: false for a result the consumer may reopen later (an operator's
 * retry of a failed payment moves its record `COMPLETED` -> `RELEASED`), whose cached copy would then answer
 * duplicates with the old result. Must not throw (a throw counts as false). Default: every completed record.
 */
export type CacheablePredicate = (record: IdempotencyRecord) => boolean;

/**
 * A bounded, in-process LRU cache of *completed* records, so a hot duplicate costs no round
 * trip. Only completed records the `cacheable` predicate accepts enter it: the store never changes
 * a completed record until its retention ends, so such an answer is never stale; a record the
 * consumer may reopen (rejected by `cacheable`) is never cached and always read from the store.
 * In-progress records are never cached (their state changes).
 * It keeps its own copy and answers with a fresh copy each time, as a read from the table would:
 * a caller that changes a replayed result changes nothing stored.
 */
export class CompletedKeyCache {
  private readonly entries = new Map<string, IdempotencyRecord>();

  constructor(
    readonly maxEntries: number,
    private readonly clock: Clock,
    private readonly cacheable?: CacheablePredicate,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new ConfigurationError(`cache size must be a positive integer, got ${maxEntries}`);
    if (cacheable !== undefined && typeof cacheable !== 'function') throw new ConfigurationError('cacheable must be a function');
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

  /**
   * Remembers a completed record the predicate accepts; other statuses are ignored. A completed record it
   * rejects also drops any entry of the key: the key's newest word is not cacheable.
   */
  put(scopedKey: string, record: IdempotencyRecord): void {
    if (record.status !== RecordStatus.Completed) return;
    this.entries.delete(scopedKey);
    if (!this.accepts(record)) return;
    this.entries.set(scopedKey, copyRecord(record));
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /** Drops the entry of `scopedKey`, if any: its record was changed (an operator reopened it). */
  forget(scopedKey: string): void {
    this.entries.delete(scopedKey);
  }

  get size(): number {
    return this.entries.size;
  }

  private accepts(record: IdempotencyRecord): boolean {
    if (!this.cacheable) return true;
    // The predicate sees a copy: it cannot change what the cache keeps.
    try {
      return this.cacheable(copyRecord(record)) === true;
    } catch {
      return false;
    }
  }
}
