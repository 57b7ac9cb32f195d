import type { IdempotencyKey } from '../protocol/keys';
import { requireRecord } from './findRecord';
import { inspectionOf } from './inspectRecord';
import { OperatorRefusal, OperatorRefusedError } from './operatorErrors';
import { clockOf } from './operatorOptions';
import type { RecordsBackend } from './RecordsBackend';
import { auditOf, changedError, describe, refuseIfMoved, requireWho, type ChangeOptions } from './releaseRecord';
import { evictPlan } from './releaseRules';
import type { RecordView } from './recordView';

/** Options of {@link evictRecord}. */
export interface EvictOptions extends ChangeOptions {
  /** Evict even while in progress, work going or the status unknown. */
  readonly force?: boolean;
}

/** What {@link evictRecord} did. */
export type EvictOutcome =
  | { readonly kind: 'evicted'; readonly before: RecordView; readonly localRows: number; readonly forced: boolean }
  | { readonly kind: 'wouldEvict'; readonly before: RecordView; readonly forced: boolean };

/**
 * Deletes the record of `key` and its local rows (in one transaction, `If-Match` on the marker's ETag): for a record
 * that must go (a data-protection erasure, a poisoned result). The key is then absent: the next delivery of its
 * message claims it afresh, attempt 1, a new lifetime, and its work runs again. Refused while in progress (lease
 * live or lapsed), while the consumer's extension reports work going, or for an unknown status, unless `force`; refused
 * when the record changed since it was read. The audit line (who, why, key, digest) is the only trace left: keep it.
 * @throws OperatorUsageError (no reason, no `by`); InvalidKeyError; OperatorRefusedError (`refused`, `changed`,
 *   `notFound`, `unknownConsumer`); OperatorPermissionError; store errors
 */
export async function evictRecord(backend: RecordsBackend, key: IdempotencyKey, options: EvictOptions): Promise<EvictOutcome> {
  requireWho(options);
  const record = await requireRecord(backend, key);
  const { view, activeWork } = await inspectionOf(backend, key, record, options);
  refuseIfMoved(record, options.expectedEtag);
  const nowMs = clockOf(options).nowMs();
  const force = options.force === true;
  const plan = evictPlan(record, view.state, nowMs, activeWork, force);
  if (plan.kind !== 'write')
    throw new OperatorRefusedError(OperatorRefusal.Refused, `eviction of ${describe(key)} refused: ${plan.kind === 'refuse' ? plan.why : ''}`);
  const forced = force && evictPlan(record, view.state, nowMs, activeWork, false).kind !== 'write';
  if (options.dryRun) return { kind: 'wouldEvict', before: view, forced };
  const deleted = await backend.deleteIf(record);
  if (deleted.kind === 'changed') throw changedError('eviction', key);
  if (deleted.kind === 'gone') throw new OperatorRefusedError(OperatorRefusal.NotFound, `eviction of ${describe(key)}: the record was deleted meanwhile`);
  options.onAudit?.(auditOf('evict', record, options, nowMs, forced));
  return { kind: 'evicted', before: view, localRows: deleted.value.localRows, forced };
}
