import { RecordStatus, type IdempotencyRecord } from '../protocol/record';
import { MAX_REASON_LENGTH } from '../protocol/storeOptions';
import { OPERATOR_RELEASE_PREFIX, RecordState } from './recordState';
import { formatTime } from './recordView';

/**
 * The operator's decisions on a record, pure: may it be released or evicted now, and what a release writes.
 *
 * ```
 *  state        release                          evict
 *  in-progress  refused (lease live)             refused unless forced
 *  lapsed       IN_PROGRESS -> RELEASED          refused unless forced (its worker may still run)
 *  completed    COMPLETED -> RELEASED            deleted with its rows
 *  failed/held  COMPLETED -> RELEASED, or
 *               nothing when already RELEASED    deleted with its rows
 *  released     nothing (already takeable)       deleted with its rows
 *  expired      nothing (counts as absent)       deleted with its rows
 *  unknown      refused                          refused unless forced
 *  work going   refused                          refused unless forced   (the consumer's extension says so)
 * ```
 * A `RELEASED` record is taken over by the next claim (attempt + 1, the same generation): the message's next delivery,
 * or its resubmission, processes it again. Its result, rows and retention stay until then.
 */
export type OperatorPlan = { readonly kind: 'write' } | { readonly kind: 'nothing'; readonly why: string } | { readonly kind: 'refuse'; readonly why: string };

/** What a release of `record` (in `state` at `nowMs`) does; `activeWork` is the consumer extension's answer. */
export function releasePlan(record: IdempotencyRecord, state: RecordState, nowMs: number, activeWork: string | undefined): OperatorPlan {
  if (state === RecordState.InProgress)
    return {
      kind: 'refuse',
      why: `its lease is live until ${formatTime(record.leaseExpiresAtMs, nowMs)} (attempt ${record.attempt}): someone works on it; release it after the lease lapses`,
    };
  if (activeWork !== undefined) return { kind: 'refuse', why: `work on it is still going (${activeWork}); release it when that has ended` };
  if (state === RecordState.Unknown)
    return { kind: 'refuse', why: `its status ${JSON.stringify(record.status)} is unknown to this version: deploy the version that wrote it, or evict it` };
  if (state === RecordState.Expired) return { kind: 'nothing', why: 'it is past its retention: it counts as absent, the next delivery starts a new lifetime' };
  if (record.status === RecordStatus.Released) return { kind: 'nothing', why: 'it is released already: the next delivery takes it over' };
  return { kind: 'write' };
}

/** What an eviction of `record` does: refused while in progress, work going or status unknown, unless `force`. */
export function evictPlan(record: IdempotencyRecord, state: RecordState, nowMs: number, activeWork: string | undefined, force: boolean): OperatorPlan {
  if (force) return { kind: 'write' };
  if (state === RecordState.InProgress)
    return { kind: 'refuse', why: `it is in progress, its lease live until ${formatTime(record.leaseExpiresAtMs, nowMs)}: pass --force to evict it anyway` };
  if (state === RecordState.Lapsed)
    return {
      kind: 'refuse',
      why: `it is in progress (lease lapsed ${formatTime(record.leaseExpiresAtMs, nowMs)}): its worker may still run; pass --force to evict it anyway`,
    };
  if (activeWork !== undefined) return { kind: 'refuse', why: `work on it is still going (${activeWork}): pass --force to evict it anyway` };
  if (state === RecordState.Unknown)
    return { kind: 'refuse', why: `its status ${JSON.stringify(record.status)} is unknown to this version: pass --force to evict it anyway` };
  return { kind: 'write' };
}

/** The `lastError` an operator's release writes: who, when and why (cut to the stores' limit). Never a payload. */
export function releaseNote(by: string, reason: string, nowMs: number): string {
  return `${OPERATOR_RELEASE_PREFIX}${by} at ${new Date(nowMs).toISOString()}: ${reason}`.slice(0, MAX_REASON_LENGTH);
}

/**
 * True when `now` is the release of `read` with `lastError` (the same lifetime, owner and attempt): the write of this
 * very release, whose answer was lost, not someone else's change.
 */
export function isReleaseOf(now: IdempotencyRecord, read: IdempotencyRecord, lastError: string): boolean {
  return (
    now.status === RecordStatus.Released &&
    now.lastError === lastError &&
    now.ownerId === read.ownerId &&
    now.attempt === read.attempt &&
    now.createdAtMs === read.createdAtMs
  );
}
