import { ConfigurationError, LeaseLostError, UnknownRecordStatusError } from './errors';
import type { Claim, ReopenOutcome } from './IdempotencyStore';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from './keys';
import { isKnownStatus, RecordStatus, type IdempotencyRecord } from './record';

/**
 * The decision rules on a stored record: pure functions of the record, a digest and the time
 * (epoch ms). The store does the I/O and asks these what to do; they are unit-tested without it.
 *
 * ```
 *  claim             leaseExpiresAtMs                         retentionExpiresAtMs
 *  |--- valid lease --->|                                        |
 *  IN_PROGRESS: inProgress | takeover (attempt + 1) ............... | expired (new generation)
 *  COMPLETED:   duplicate (same digest) ........................... | expired
 *  RELEASED:    takeover at once .................................. | expired
 *  any status, other digest: keyReused (until expired)
 * ```
 * At `nowMs === leaseExpiresAtMs` the lease has lapsed; at `nowMs === retentionExpiresAtMs` the
 * record has expired (unless it holds a valid lease).
 */

/** What a claim does with an existing record. */
export type ClaimDecision = 'expired' | 'takeover' | 'duplicate' | 'inProgress' | 'keyReused';

/** True when the record's lease is held by someone at `nowMs` (the lease ends at `leaseExpiresAtMs`, exclusive). */
export function hasValidLease(record: Pick<IdempotencyRecord, 'status' | 'leaseExpiresAtMs'>, nowMs: number): boolean {
  return record.status === RecordStatus.InProgress && record.leaseExpiresAtMs > nowMs;
}

/** True when the record is past retention (at `retentionExpiresAtMs` included) and holds no valid lease: it counts as absent. */
export function isExpired(record: Pick<IdempotencyRecord, 'status' | 'leaseExpiresAtMs' | 'retentionExpiresAtMs'>, nowMs: number): boolean {
  return record.retentionExpiresAtMs <= nowMs && !hasValidLease(record, nowMs);
}

/**
 * The decision on an existing record for a claimant with `digest`, in this order: expired -> take
 * over as a new lifetime; unknown status -> refused; other digest -> keyReused; completed ->
 * duplicate; valid lease -> inProgress; lapsed lease or released -> take over (attempt + 1).
 * @throws UnknownRecordStatusError for a live record whose status this version does not know
 *   (`scopedKey` names it in the error).
 */
export function decideClaim(existing: IdempotencyRecord, digest: string, nowMs: number, scopedKey: string): ClaimDecision {
  if (isExpired(existing, nowMs)) return 'expired';
  if (!isKnownStatus(existing.status)) throw new UnknownRecordStatusError(scopedKey, String(existing.status));
  if (existing.digest !== digest) return 'keyReused';
  if (existing.status === RecordStatus.Completed) return 'duplicate';
  if (hasValidLease(existing, nowMs)) return 'inProgress';
  return 'takeover';
}

/** The generation a takeover writes: a new one (`nowMs`) for an expired record, else the record's own. */
export function generationAfterTakeover(decision: ClaimDecision, existing: IdempotencyRecord, nowMs: number): number {
  return decision === 'expired' ? nowMs : existing.createdAtMs;
}

/** A completed record from the cache answers a claim without a read: same digest -> duplicate, else keyReused. */
export function cachedDecision(record: IdempotencyRecord, digest: string): 'duplicate' | 'keyReused' {
  return record.digest === digest ? 'duplicate' : 'keyReused';
}

/** What a conditional write of a claim meant to leave on record (see {@link isOwnWrite}). */
export interface IntendedWrite {
  readonly ownerId: string;
  readonly attempt: number;
  readonly status: string;
  readonly leaseExpiresAtMs: number;
  /** The result's JSON, `undefined` for no result. */
  readonly resultJson: string | undefined;
  /** The local rows the write leaves on record (names; the rows' contents are compared by {@link sameRowProperties}). */
  readonly localRows: readonly string[];
}

/**
 * After a conditional write failed on its condition: true when `current`'s marker is exactly what the
 * write meant to leave (its first try landed and only the answer was lost, or the same claim made the
 * same write before), false when someone else wrote in between (the lease was lost), the record is gone,
 * or it lists other local rows. The store then also compares the rows' contents ({@link sameRowProperties}).
 */
export function isOwnWrite(current: IdempotencyRecord | undefined, intended: IntendedWrite): boolean {
  return (
    current !== undefined &&
    current.ownerId === intended.ownerId &&
    current.attempt === intended.attempt &&
    current.status === intended.status &&
    current.leaseExpiresAtMs === intended.leaseExpiresAtMs &&
    (current.result === undefined ? undefined : JSON.stringify(current.result)) === intended.resultJson &&
    sameNames(current.localRows, intended.localRows)
  );
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join(',') === [...b].sort().join(',');
}

/**
 * The properties a local row keeps of `properties`: `null` values are left out (a Table row cannot
 * hold null: both stores drop them, so a row reads back the same from either).
 */
export function storedRowProperties(properties: Readonly<Record<string, string | number | boolean | null>>): Record<string, string | number | boolean> {
  const kept: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(properties)) if (value !== null) kept[name] = value;
  return kept;
}

/** True when a stored row (`stored`, its own properties only) holds exactly what `intended` would write. */
export function sameRowProperties(
  stored: Readonly<Record<string, unknown>> | undefined,
  intended: Readonly<Record<string, string | number | boolean | null>>,
): boolean {
  if (stored === undefined) return false;
  const kept = storedRowProperties(intended);
  const names = Object.keys(stored);
  return names.length === Object.keys(kept).length && names.every((name) => stored[name] === kept[name]);
}

/**
 * True when `current` is still the record of the claim `held` (same owner id and attempt, in
 * progress): its ETag moved only because the claim itself renewed its lease (a heartbeat, or a
 * renewal the work called). A takeover writes another owner id and attempt, so it never passes.
 */
export function isStillHeldBy(current: IdempotencyRecord, held: { readonly ownerId: string; readonly attempt: number }): boolean {
  return current.status === RecordStatus.InProgress && current.ownerId === held.ownerId && current.attempt === held.attempt;
}

/**
 * How a store reopens a completed record (`ReopenableStore.reopen`): as a conditional rewrite of the record's own
 * claim (its owner, attempt, generation, rows and ETag, so a record changed since it was read is refused as a
 * lost lease is) to `RELEASED`, lease 0, its result kept, `reason` (cut to `maxReasonLength`) as its `lastError`.
 * @throws ConfigurationError when the record is not completed
 */
export function reopening(record: IdempotencyRecord, reason: string, maxReasonLength: number) {
  if (record.status !== RecordStatus.Completed) throw new ConfigurationError(`only a completed record is reopened; this one is ${record.status}`);
  const claim = claimOf({ consumer: record.consumer, key: record.key }, record.digest, record);
  const change = {
    status: RecordStatus.Released,
    leaseExpiresAtMs: 0,
    resultJson: record.result === undefined ? undefined : JSON.stringify(record.result),
    lastError: String(reason).slice(0, maxReasonLength),
  };
  return { claim, change };
}

/**
 * A store's reopen ({@link reopening}) through its conditional `rewrite` of a claim: `changed` when the record moved
 * since it was read (the rewrite's lease was lost), else the reopened record, after `forget` dropped the key's
 * cached completion (its scoped key string), so a later delivery reads the reopened record.
 */
export async function reopenBy(
  record: IdempotencyRecord,
  reason: string,
  maxReasonLength: number,
  rewrite: (claim: Claim, change: ReturnType<typeof reopening>['change']) => Promise<IdempotencyRecord>,
  forget: (scopedKey: string) => void,
): Promise<ReopenOutcome> {
  const { claim, change } = reopening(record, reason, maxReasonLength);
  assertValidKey(claim.key);
  let reopened: IdempotencyRecord;
  try {
    reopened = await rewrite(claim, change);
  } catch (error) {
    if (error instanceof LeaseLostError) return { kind: 'changed' };
    throw error;
  }
  forget(scopedKeyString(claim.key));
  return { kind: 'reopened', record: reopened };
}

/** The claim a written marker stands for. */
export function claimOf(key: IdempotencyKey, digest: string, record: IdempotencyRecord): Claim {
  return {
    key,
    recordId: record.recordId,
    digest,
    attempt: record.attempt,
    ownerId: record.ownerId,
    leaseExpiresAtMs: record.leaseExpiresAtMs,
    createdAtMs: record.createdAtMs,
    localRows: record.localRows,
    etag: record.etag,
  };
}
