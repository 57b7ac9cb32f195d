import { createHash } from 'node:crypto';
import type { LocalEffect } from '../../protocol/IdempotencyStore';
import type { IdempotencyKey } from '../../protocol/keys';
import type { IdempotencyRecord } from '../../protocol/record';
import type { DeadLetteredMessage } from './DeadLetterQueue';
import type { ReplayEvidence } from './replayDecision';

/**
 * The replay's progress markers: one idempotency record per dead-lettered message (queue, consumer, sequence number,
 * enqueue time, MessageId), under their own consumer name, in the same table or container as the records. Claimed before the
 * message's key is released or a copy is sent, completed once the copy is sent: a replay run again after an
 * interruption finds it completed and only removes the message, or finds it claimed and reads what the interrupted
 * run saw of the record (its local row `replay`: the record's attempt and status then). The expiry sweep (Table) or
 * TTL (Cosmos) removes them after their retention, as any record.
 */
export const REPLAY_CONSUMER = 'azure-functions-idempotency.dlq-replay';

/** The marker row holding the evidence. */
export const EVIDENCE_ROW = 'replay';

/**
 * The marker key of one dead-lettered message of `consumer`'s queue: the queue, the consumer, the message's sequence
 * number and enqueue time, its MessageId. Sequence numbers are unique in a queue's lifetime only: a queue deleted and
 * created again under its name starts them again, and its messages must not find the old queue's markers (they would
 * be removed as "already resent", never resent). The enqueue time tells them apart.
 */
export function replayMarkerKey(queueName: string, consumer: string, message: DeadLetteredMessage, messageId: string): IdempotencyKey {
  return { consumer: REPLAY_CONSUMER, key: JSON.stringify([queueName, consumer, message.sequenceNumber, message.enqueuedAtMs ?? null, messageId]) };
}

/** The marker's digest: the same message always has the same (a marker never reads as a reused key). */
export function replayMarkerDigest(key: IdempotencyKey): string {
  return createHash('sha256').update(key.key, 'utf8').digest('hex');
}

/** The evidence of `record` as it is now (0 and `absent` for no record). */
export function evidenceOf(record: IdempotencyRecord | undefined): ReplayEvidence {
  return { attempt: record?.attempt ?? 0, status: record?.status ?? 'absent' };
}

/** The marker's local row holding `evidence`. */
export function evidenceRow(evidence: ReplayEvidence): LocalEffect {
  return { name: EVIDENCE_ROW, properties: { attempt: evidence.attempt, status: evidence.status } };
}

/** The evidence kept on a marker's row, or undefined when the row is missing or not one. */
export function readEvidence(row: Readonly<Record<string, unknown>> | undefined): ReplayEvidence | undefined {
  const attempt = Number(row?.attempt);
  return row && Number.isInteger(attempt) && typeof row.status === 'string' ? { attempt, status: row.status } : undefined;
}
