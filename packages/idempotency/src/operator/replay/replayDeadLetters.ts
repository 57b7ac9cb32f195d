import { InvalidKeyError } from '../../protocol/errors';
import type { Claim, IdempotencyStore } from '../../protocol/IdempotencyStore';
import { assertValidKey, keyFromMessageId, type IdempotencyKey } from '../../protocol/keys';
import { RecordStatus } from '../../protocol/record';
import { isExpired } from '../../protocol/recordRules';
import { OperatorUsageError } from '../operatorErrors';
import { clockOf, type OperatorAudit, type OperatorOptions } from '../operatorOptions';
import type { RecordsBackend } from '../RecordsBackend';
import { extensionFor, recordState } from '../recordState';
import { releaseNote } from '../releaseRules';
import type { DeadLetteredMessage, DeadLetterQueue } from './DeadLetterQueue';
import { ReplayAction, replayDecision, type ReplayStep } from './replayDecision';
import { EVIDENCE_ROW, evidenceOf, evidenceRow, readEvidence, replayMarkerDigest, replayMarkerKey } from './replayMarkers';

/** Options of {@link replayDeadLetters}. */
export interface ReplayOptions extends OperatorOptions {
  /** The consumer whose records the messages' keys are (`payments`). */
  readonly consumer: string;
  /** Who runs it, and why: recorded on each key it releases and in the audit. */
  readonly by: string;
  readonly reason?: string;
  /** The key of a message (default: `keyFromMessageId(consumer, messageId)`); undefined or a throw: no usable key. */
  readonly keyOf?: (message: DeadLetteredMessage) => IdempotencyKey | undefined;
  /** Decide and report each message without locking, writing or sending anything. */
  readonly dryRun?: boolean;
  /** Most messages to look at (default 1,000). */
  readonly maxMessages?: number;
  /**
   * The queue's duplicate detection window (`duplicateDetectionHistoryTimeWindow`), ms; 0 when it has none. A message
   * enqueued less than this ago is left: its copy would be dropped as a duplicate of it. Default 10 minutes.
   */
  readonly duplicateWindowMs?: number;
  /** How long a receive waits for messages (default 2 s): an empty receive ends the run. */
  readonly receiveWaitMs?: number;
  /** The progress markers' retention (default 14 days) and lease (default 60 s: one message's release, send and complete). */
  readonly markerRetentionMs?: number;
  readonly markerLeaseMs?: number;
  /** Told each message's outcome as it is decided (the CLI prints one line each). */
  readonly onMessage?: (message: ReplayedMessage) => void;
  readonly onAudit?: (entry: OperatorAudit) => void;
}

/** One message's outcome: its MessageId and sequence number (never its content). */
export interface ReplayedMessage {
  readonly messageId: string | undefined;
  readonly sequenceNumber: string;
  readonly action: ReplayAction;
  /** True in a dry run: what would be done. */
  readonly dryRun: boolean;
  readonly detail: string;
}

/** The report of {@link replayDeadLetters}: a count per action and each message's outcome. */
export interface ReplayReport {
  readonly queueName: string;
  readonly dryRun: boolean;
  readonly counts: Readonly<Record<ReplayAction, number>>;
  readonly messages: readonly ReplayedMessage[];
}

const DEFAULT_DUPLICATE_WINDOW_MS = 10 * 60_000;
const RECEIVE_BATCH = 32;

/**
 * Resubmits a queue's dead-lettered messages, dedup-aware, each decided on its key's record
 * ({@link replayDecision}): a completed key is removed from the dead-letter queue without a resend; a failed or held
 * one is released first (as `releaseRecord` does), then resent; no record, a released or expired one is resent; one in
 * progress, or with work going, is left. Every outcome is counted and reported; nothing prints content.
 *
 * **Run again after an interruption, nothing is processed twice and nothing is lost.** Per message, in this order:
 * 1. its progress marker (an idempotency record of its own, {@link REPLAY_CONSUMER}) is claimed, with what the run
 *    saw of the key's record (attempt, status); 2. the key is released (`If-Match`) if it must be; 3. a copy is sent
 *    with the same MessageId; 4. the marker is completed; 5. the message is completed (removed). Interrupted:
 *    - before 3: the message's lock lapses, it comes back, and a rerun decides it again (a release that landed is
 *      found as `RELEASED` at the same attempt: resent, never released twice);
 *    - between 3 and 4 (sent, not marked): a rerun may send a second copy. Service Bus duplicate detection (a queue
 *      with `requiresDuplicateDetection`, within its window) drops it: same MessageId. Without it, both copies reach
 *      the consumer, and the key's record deduplicates: the first takes the released key over, the second finds it in
 *      progress or completed (same digest). A record whose attempt moved past the marker's evidence was processed
 *      since: the rerun removes the message without a resend and never releases the key again (a failure again
 *      would otherwise be processed twice). So there is no second *effective* processing;
 *    - between 4 and 5: the rerun finds the marker completed and only removes the message.
 * A message enqueued within the duplicate detection window is left (its copy would be dropped as a duplicate of it,
 * and the message lost once removed); messages left stay in the dead-letter queue, their locks released at the end.
 * @throws OperatorUsageError for bad options; store and broker errors (the run stops; run it again)
 */
export async function replayDeadLetters(queue: DeadLetterQueue, backend: RecordsBackend, options: ReplayOptions): Promise<ReplayReport> {
  const run = replayRun(queue, backend, options);
  const seen = new Set<string>();
  const left: DeadLetteredMessage[] = [];
  try {
    while (seen.size < run.maxMessages) {
      const want = Math.min(RECEIVE_BATCH, run.maxMessages - seen.size);
      const batch = options.dryRun ? await queue.peek(want) : await queue.receive(want, options.receiveWaitMs ?? 2_000);
      const fresh = batch.filter((message) => !seen.has(message.sequenceNumber));
      if (fresh.length === 0) break;
      for (const message of fresh) {
        seen.add(message.sequenceNumber);
        if ((await run.one(message)) === 'left' && !options.dryRun) left.push(message);
      }
    }
  } finally {
    // Messages left go back at once (their locks released), for the next run or an operator.
    for (const message of left) await queue.abandon(message).catch(() => undefined);
  }
  return { queueName: queue.queueName, dryRun: options.dryRun === true, counts: run.counts, messages: run.messages };
}

/** One run's state and its per-message step. */
function replayRun(queue: DeadLetterQueue, backend: RecordsBackend, options: ReplayOptions) {
  assertValidKey({ consumer: options.consumer, key: '-' });
  if (!options.by?.trim()) throw new OperatorUsageError('who replays is required (--by, default the environment user)');
  const maxMessages = options.maxMessages ?? 1000;
  if (!Number.isInteger(maxMessages) || maxMessages < 1 || maxMessages > 100_000)
    throw new OperatorUsageError(`maxMessages must be from 1 to 100000, got ${maxMessages}`);
  const windowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
  if (!Number.isFinite(windowMs) || windowMs < 0) throw new OperatorUsageError(`duplicateWindowMs must be 0 or more, got ${windowMs}`);
  const clock = clockOf(options);
  const reason = options.reason?.trim() || `dead-letter replay of ${queue.queueName}`;
  const extension = extensionFor(options.extensions, options.consumer);
  const markers: IdempotencyStore = backend.markerStore({
    retentionMs: options.markerRetentionMs ?? 14 * 86_400_000,
    leaseMs: options.markerLeaseMs ?? 60_000,
    clock,
  });
  const counts = Object.fromEntries(Object.values(ReplayAction).map((action) => [action, 0])) as Record<ReplayAction, number>;
  const messages: ReplayedMessage[] = [];
  const report = (message: DeadLetteredMessage, messageId: string | undefined, action: ReplayAction, detail: string): 'left' | 'done' => {
    counts[action]++;
    const outcome = { messageId, sequenceNumber: message.sequenceNumber, action, dryRun: options.dryRun === true, detail };
    messages.push(outcome);
    options.onMessage?.(outcome);
    return action.startsWith('left-') ? 'left' : 'done';
  };
  const keyOf = (message: DeadLetteredMessage): IdempotencyKey | undefined => {
    try {
      return options.keyOf ? options.keyOf(message) : keyFromMessageId(options.consumer, message.messageId);
    } catch (error) {
      if (error instanceof InvalidKeyError) return undefined;
      throw error;
    }
  };
  const audit = (action: OperatorAudit['action'], key: IdempotencyKey, digest: string, status: string, attempt: number) =>
    options.onAudit?.({
      action,
      at: new Date(clock.nowMs()).toISOString(),
      by: options.by,
      reason,
      consumer: key.consumer,
      key: key.key,
      digest,
      status,
      attempt,
    });

  async function one(message: DeadLetteredMessage): Promise<'left' | 'done'> {
    const key = keyOf(message);
    const messageId = key?.key ?? (typeof message.messageId === 'string' ? message.messageId : undefined);
    if (!key) return report(message, messageId, ReplayAction.LeftNoKey, 'no usable MessageId: it never claimed a record; resolve it by hand');
    const nowMs = clock.nowMs();
    if (message.enqueuedAtMs !== undefined && nowMs - message.enqueuedAtMs < windowMs)
      return report(
        message,
        messageId,
        ReplayAction.LeftTooRecent,
        `enqueued less than the duplicate detection window (${windowMs} ms) ago: a copy would be dropped; replay later`,
      );
    const markerKey = replayMarkerKey(queue.queueName, options.consumer, message, key.key);
    const marker = await markers.get(markerKey);
    if (marker && marker.status === RecordStatus.Completed && !isExpired(marker, nowMs)) {
      if (!options.dryRun) await queue.complete(message);
      return report(message, messageId, ReplayAction.AlreadyResent, 'an earlier replay sent its copy: removed from the dead-letter queue');
    }
    if (marker && marker.status === RecordStatus.InProgress && marker.leaseExpiresAtMs > nowMs)
      return report(message, messageId, ReplayAction.LeftBusy, 'another replay is working on it');
    const evidence = marker ? readEvidence(await backend.readLocalRow(markerKey, EVIDENCE_ROW)) : undefined;
    const record = await backend.read(key);
    const state = record && recordState(record, nowMs, extension);
    const activeWork =
      record && extension?.activeWork ? await extension.activeWork(record, { key, readLocalRow: (name) => backend.readLocalRow(key, name) }) : undefined;
    const step: ReplayStep = replayDecision(record, state, activeWork, evidence);
    const seenAs = record ? `${record.status} attempt ${record.attempt}${state ? ` (${state})` : ''}` : 'no record';
    if (step.kind === 'leave') return report(message, messageId, step.action, `its key is ${seenAs}${activeWork ? `; ${activeWork}` : ''}`);
    if (step.kind === 'complete') {
      if (!options.dryRun) await queue.complete(message);
      return report(
        message,
        messageId,
        ReplayAction.CompletedWithoutResend,
        `its key is ${seenAs}${evidence ? ' (processed since an earlier replay)' : ''}: removed, not resent`,
      );
    }
    const action = step.kind === 'releaseAndResend' ? ReplayAction.ReleasedAndResent : ReplayAction.Resent;
    if (options.dryRun) return report(message, messageId, action, `its key is ${seenAs}`);
    // 1. The marker, with what this run saw (kept from an interrupted run's: its attempt is the one that counts).
    const claimed = await markers.claim(markerKey, replayMarkerDigest(markerKey), { effects: [evidenceRow(evidence ?? evidenceOf(record))] });
    if (claimed.kind === 'duplicate') {
      await queue.complete(message);
      return report(message, messageId, ReplayAction.AlreadyResent, 'another replay sent its copy meanwhile: removed');
    }
    if (claimed.kind !== 'claimed' && claimed.kind !== 'reclaimed') return report(message, messageId, ReplayAction.LeftBusy, 'another replay is working on it');
    const claim: Claim = claimed.claim;
    // 2. The release, If-Match on the record read.
    if (step.kind === 'releaseAndResend' && record) {
      const released = await backend.releaseIf(record, releaseNote(options.by, reason, nowMs), nowMs);
      if (released.kind === 'changed') {
        await markers.release(claim, 'record changed before its release');
        return report(message, messageId, ReplayAction.LeftChanged, `its key changed since it was read (${seenAs} then): run again`);
      }
      audit('replay-release', key, record.digest, record.status, record.attempt);
    }
    // 3. The copy, 4. the marker, 5. the message.
    await queue.resend(message);
    if (record) audit('replay-resend', key, record.digest, record.status, record.attempt);
    await markers.complete(claim, { resent: true });
    await queue.complete(message);
    return report(message, messageId, action, `its key was ${seenAs}: ${action === ReplayAction.ReleasedAndResent ? 'released, ' : ''}resent, removed`);
  }

  return { maxMessages, counts, messages, one };
}
