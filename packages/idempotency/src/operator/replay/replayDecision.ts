import { RecordStatus, type IdempotencyRecord } from '../../protocol/record';
import { RecordState } from '../recordState';

/** What the replay did with one dead-lettered message (or would do, in a dry run). */
export const ReplayAction = {
  /** Its key is completed: removed from the dead-letter queue without a resend (the work is done). */
  CompletedWithoutResend: 'completed-without-resend',
  /** An earlier replay resent it (its progress marker is completed): removed from the dead-letter queue. */
  AlreadyResent: 'already-resent',
  /** No record, or one its next delivery takes over (released, expired): a copy sent, then removed. */
  Resent: 'resent',
  /** Its key was failed or held (a completed result of its consumer's reading): released first, then resent, then removed. */
  ReleasedAndResent: 'released-and-resent',
  /** Its key is in progress (lease live or lapsed) or its consumer reports work going: left in the dead-letter queue. */
  LeftInProgress: 'left-in-progress',
  /** Enqueued within the duplicate detection window: a copy would be dropped as a duplicate of it. Left; replay later. */
  LeftTooRecent: 'left-too-recent',
  /** Another replay holds this message's progress marker: left. */
  LeftBusy: 'left-busy',
  /** No usable MessageId (it never claimed a record): left for an operator. */
  LeftNoKey: 'left-no-key',
  /** Its record has a status this version does not know: left. */
  LeftUnknownStatus: 'left-unknown-status',
  /** Its record changed between the read and the release: left; run again. */
  LeftChanged: 'left-changed',
} as const;
export type ReplayAction = (typeof ReplayAction)[keyof typeof ReplayAction];

/**
 * What an earlier replay of the same dead-lettered message saw of the record before it acted (kept on its progress
 * marker): the record's attempt (0: no record) and status. A record whose attempt moved past it was processed since.
 */
export interface ReplayEvidence {
  readonly attempt: number;
  readonly status: string;
}

/** The step decided for one message: leave it, complete it without a resend, resend it, or release its key and resend. */
export type ReplayStep = { readonly kind: 'leave'; readonly action: ReplayAction } | { readonly kind: 'complete' | 'resend' | 'releaseAndResend' };

/**
 * The replay's decision on one message whose key's record is `record` (in `state`), pure.
 *
 * Without `evidence` (no earlier replay acted on this message): completed -> complete without a resend; failed or held
 * and `COMPLETED` -> release, then resend; no record, expired, released -> resend; in progress or work going -> leave.
 *
 * With `evidence` (an earlier replay claimed this message's marker and stopped before finishing: it may have released
 * the key and sent a copy): a record whose attempt moved past the evidence's was processed since (the copy, or
 * something else) -> complete without a resend, never release it a second time (its new result may be a failure
 * again: releasing it again would process the message twice); the same attempt -> as without evidence (a copy sent
 * before is deduplicated by the broker within its window, else by the record: its first copy takes it over).
 */
export function replayDecision(
  record: IdempotencyRecord | undefined,
  state: RecordState | undefined,
  activeWork: string | undefined,
  evidence: ReplayEvidence | undefined,
): ReplayStep {
  if (record === undefined || state === RecordState.Expired) return { kind: 'resend' };
  if (state === RecordState.InProgress || state === RecordState.Lapsed || activeWork !== undefined)
    return { kind: 'leave', action: ReplayAction.LeftInProgress };
  if (state === RecordState.Unknown) return { kind: 'leave', action: ReplayAction.LeftUnknownStatus };
  if (evidence !== undefined && record.attempt > evidence.attempt) return { kind: 'complete' };
  if (state === RecordState.Completed) return { kind: 'complete' };
  if (record.status === RecordStatus.Completed) return { kind: 'releaseAndResend' }; // failed or held, as its consumer reads it
  return { kind: 'resend' }; // released: by an operator, or by a failing attempt
}
