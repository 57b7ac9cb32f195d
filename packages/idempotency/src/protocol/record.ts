/**
 * The dedup record: one per scoped key. Every time is epoch milliseconds and says so in its name.
 *
 * Lifecycle of one key (times left to right):
 *
 * ```
 *  claim (attempt 1)         lease lapses            takeover (attempt 2)     complete
 *  |--- lease (leaseMs) ---->|                       |--- lease ------------->|
 *  IN_PROGRESS ..............(claimable again) ......IN_PROGRESS .............COMPLETED ..... retention ....>| sweepable
 *                                                                                                        retentionExpiresAtMs
 * ```
 *
 * - `IN_PROGRESS` with `leaseExpiresAtMs > now`: someone works on it; others get "in progress".
 * - `IN_PROGRESS` with a lapsed lease, or `RELEASED`: the next claimant takes it over with an
 *   ETag-conditional update and `attempt + 1` (the fencing number).
 * - `COMPLETED`: immutable; duplicates with the same digest get the stored result.
 * - Past `retentionExpiresAtMs` (and not under a valid lease) the record may be deleted by the
 *   expiry sweep, together with its local rows; until it is, a claim treats it as absent and
 *   starts a new lifetime (a new `createdAtMs`, the record's generation).
 * - Any other status (written by a newer version, or by hand) is refused, never taken over:
 *   the work it stands for may have completed.
 */
export const RecordStatus = {
  InProgress: 'IN_PROGRESS',
  Completed: 'COMPLETED',
  Released: 'RELEASED',
} as const;
export type RecordStatus = (typeof RecordStatus)[keyof typeof RecordStatus];

const KNOWN_STATUSES: ReadonlySet<string> = new Set(Object.values(RecordStatus));

/** True for the statuses this code knows how to decide on. */
export function isKnownStatus(status: unknown): status is RecordStatus {
  return typeof status === 'string' && KNOWN_STATUSES.has(status);
}

export interface IdempotencyRecord {
  /** The store's opaque id of this record (the same as a claim's `recordId`). */
  readonly recordId: string;
  readonly consumer: string;
  readonly key: string;
  readonly status: RecordStatus;
  /** SHA-256 (hex) of the canonical payload that claimed the key. */
  readonly digest: string;
  /** The stored result of a completed record (`undefined` when the work returned nothing). */
  readonly result: unknown;
  /** Fencing number: 1 on the first claim, +1 on every takeover. */
  readonly attempt: number;
  /** Random id of the claimant holding (or last holding) the lease. */
  readonly ownerId: string;
  /** End of the current lease; 0 once completed or released. */
  readonly leaseExpiresAtMs: number;
  /** After this (and with no valid lease) the record may be deleted. */
  readonly retentionExpiresAtMs: number;
  /**
   * Start of this record's lifetime (its generation): set by the first claim and by the takeover
   * of an expired record, kept by every other write. Work started for one generation never
   * answers another.
   */
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** Names of the local rows written with this record (`<RowKey>~<name>`); the sweep deletes them with it. */
  readonly localRows: readonly string[];
  /** Why the last attempt released the key (never a payload). */
  readonly lastError?: string;
  /** The store's version tag, used for conditional writes. */
  readonly etag: string;
}

/**
 * An independent copy of a record: its result (JSON data, as stored) and its list of local rows are
 * copied, so a caller that changes a replayed result in place never changes what later replays see.
 */
export function copyRecord(record: IdempotencyRecord): IdempotencyRecord {
  return {
    ...record,
    result: record.result === undefined ? undefined : (JSON.parse(JSON.stringify(record.result)) as unknown),
    localRows: [...record.localRows],
  };
}
