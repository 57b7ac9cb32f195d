import type { IdempotencyKey } from '../protocol/keys';
import { RecordStatus, type IdempotencyRecord } from '../protocol/record';
import { requireRecord } from './findRecord';
import { inspectionOf } from './inspectRecord';
import { OperatorRefusal, OperatorRefusedError, OperatorUsageError } from './operatorErrors';
import { clockOf, type OperatorAudit, type OperatorOptions } from './operatorOptions';
import type { RecordsBackend } from './RecordsBackend';
import { releaseNote, releasePlan } from './releaseRules';
import type { RecordView } from './recordView';

/** Options of {@link releaseRecord} (and, with `force`, of `evictRecord`). */
export interface ChangeOptions extends OperatorOptions {
  /** Who does it (the CLI's default: the environment's user). Recorded. */
  readonly by: string;
  /** Why (required, never a payload). Recorded. */
  readonly reason: string;
  /** The ETag the operator saw (`show`): refused if the record has another one now. Default: the one read now. */
  readonly expectedEtag?: string;
  /** Decide and report, write nothing. */
  readonly dryRun?: boolean;
  /** Told each change made (the audit trail). */
  readonly onAudit?: (entry: OperatorAudit) => void;
}

/** What {@link releaseRecord} did. */
export type ReleaseOutcome =
  /** Released: `RELEASED`, lease 0, who and why in `lastError`; `before` is the record as it was read. */
  | { readonly kind: 'released'; readonly before: RecordView; readonly record: IdempotencyRecord; readonly note: string | undefined }
  /** A dry run: this would be released. */
  | { readonly kind: 'wouldRelease'; readonly before: RecordView; readonly note: string | undefined }
  /** Nothing to do: the key can be processed again already (released, expired). */
  | { readonly kind: 'nothing'; readonly before: RecordView; readonly why: string };

/**
 * The operator's release: lets the key be processed again. The record becomes `RELEASED` (lease 0; its result, rows,
 * generation and retention kept; `lastError` = `released by operator <by> at <time>: <reason>`), so the next delivery
 * of its message (a redelivery, or a resubmission: `dlq replay`) takes it over, attempt + 1. From `COMPLETED` (also a
 * consumer's failed or held result) or from `IN_PROGRESS` whose lease lapsed.
 *
 * Refused, nothing written: while the lease is live; while the consumer's extension reports work still going (a
 * Durable run); for an unknown status; when the record changed since it was read (the write is `If-Match` on the ETag
 * read, or on `expectedEtag`: a claim, a renewal or another operator in between makes it refuse, never overwrite).
 *
 * Mind the completed-key cache: an instance whose store caches completed records (`cacheSize`) answers a duplicate of
 * a released `COMPLETED` key from memory until the entry goes; make such results non-cacheable (`cacheable`).
 * @throws OperatorUsageError (no reason, no `by`); InvalidKeyError; OperatorRefusedError (`refused`, `changed`,
 *   `notFound`, `unknownConsumer`); OperatorPermissionError; store errors
 */
export async function releaseRecord(backend: RecordsBackend, key: IdempotencyKey, options: ChangeOptions): Promise<ReleaseOutcome> {
  requireWho(options);
  const record = await requireRecord(backend, key);
  const { view, activeWork } = await inspectionOf(backend, key, record, options);
  refuseIfMoved(record, options.expectedEtag);
  const nowMs = clockOf(options).nowMs();
  const plan = releasePlan(record, view.state, nowMs, activeWork);
  if (plan.kind === 'refuse') throw new OperatorRefusedError(OperatorRefusal.Refused, `release of ${describe(key)} refused: ${plan.why}`);
  if (plan.kind === 'nothing') return { kind: 'nothing', before: view, why: plan.why };
  const note = record.status === RecordStatus.Completed ? COMPLETED_CACHE_NOTE : undefined;
  if (options.dryRun) return { kind: 'wouldRelease', before: view, note };
  const lastError = releaseNote(options.by, options.reason, nowMs);
  const written = await backend.releaseIf(record, lastError, nowMs);
  if (written.kind === 'changed') throw changedError('release', key);
  if (written.kind === 'gone')
    throw new OperatorRefusedError(OperatorRefusal.NotFound, `release of ${describe(key)}: the record was deleted meanwhile; nothing written`);
  options.onAudit?.(auditOf('release', record, options, nowMs));
  return { kind: 'released', before: view, record: written.value, note };
}

/** Said when a `COMPLETED` record is released. */
export const COMPLETED_CACHE_NOTE =
  'instances whose store caches completed records (cacheSize) may answer a duplicate of this key from memory until the entry goes; ' +
  "a result you release must be kept out of the cache (the store's cacheable option)";

/** @throws OperatorUsageError when `by` or `reason` is blank. */
export function requireWho(options: { readonly by: string; readonly reason: string }): void {
  if (typeof options.reason !== 'string' || options.reason.trim() === '')
    throw new OperatorUsageError('a reason is required (--reason "...": why, never a payload)');
  if (typeof options.by !== 'string' || options.by.trim() === '') throw new OperatorUsageError('who does it is required (--by, default the environment user)');
}

/** @throws OperatorRefusedError (`changed`) when `expectedEtag` is given and the record has another ETag. */
export function refuseIfMoved(record: IdempotencyRecord, expectedEtag: string | undefined): void {
  if (expectedEtag !== undefined && expectedEtag !== record.etag)
    throw new OperatorRefusedError(
      OperatorRefusal.Changed,
      `${describe(record)} changed since you read it (ETag ${expectedEtag}, now ${record.etag}, ${record.status} attempt ${record.attempt}): look again; nothing written`,
    );
}

/** The refusal of a conditional write whose ETag no longer matched. */
export function changedError(action: string, key: IdempotencyKey): OperatorRefusedError {
  return new OperatorRefusedError(
    OperatorRefusal.Changed,
    `${action} of ${describe(key)} refused: the record changed since it was read (a claim, a renewal, a completion or another operator); nothing written, look again`,
  );
}

/** The audit line of a change of `record`. */
export function auditOf(action: OperatorAudit['action'], record: IdempotencyRecord, options: ChangeOptions, nowMs: number, forced?: boolean): OperatorAudit {
  return {
    action,
    at: new Date(nowMs).toISOString(),
    by: options.by,
    reason: options.reason,
    consumer: record.consumer,
    key: record.key,
    digest: record.digest,
    status: record.status,
    attempt: record.attempt,
    ...(forced ? { forced } : {}),
  };
}

/** `consumer/key` as an operator reads it: the key quoted as JSON (exactly what it is). */
export function describe(key: IdempotencyKey): string {
  return `${key.consumer} key ${JSON.stringify(key.key)}`;
}
