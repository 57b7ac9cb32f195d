/** What the local queue carries: messages as sent, locked and dead-lettered; its options; a lost lock's error. */
import type { Clock } from 'azure-functions-idempotency/internal';

/** A message as a producer sends it. `tag` is the sender's own bookkeeping; consumers never see it. */
export interface QueueMessage<Tag = unknown> {
  readonly messageId?: unknown;
  readonly body: unknown;
  readonly correlationId?: string;
  /** Service Bus application properties (e.g. the orders queue's `type`). */
  readonly applicationProperties?: Readonly<Record<string, unknown>>;
  readonly tag?: Tag;
}

/** One peek-locked delivery: settle it with `complete` / `abandon` on the queue before `lockedUntilMs`. */
export interface LockedMessage<Tag = unknown> {
  readonly message: QueueMessage<Tag>;
  readonly sequenceNumber: number;
  readonly lockToken: string;
  /** 1 on the first delivery, + 1 on every redelivery (after an abandon or an expired lock). */
  readonly deliveryCount: number;
  readonly lockedUntilMs: number;
  readonly enqueuedAtMs: number;
}

/** A message moved to the dead-letter queue; it stays there for an operator. */
export interface DeadLetteredMessage<Tag = unknown> {
  readonly message: QueueMessage<Tag>;
  readonly sequenceNumber: number;
  readonly deliveryCount: number;
  readonly reason: 'MaxDeliveryCountExceeded' | 'TTLExpiredException';
  /** The last handler error (or `lock expired` when the last delivery was never settled). */
  readonly lastError: string;
}

/** Settling a message whose lock expired (or was taken by another receiver): the message stays in the queue. */
export class MessageLockLostError extends Error {
  constructor(sequenceNumber: number) {
    super(`the lock on message ${sequenceNumber} was lost (expired or taken by another receiver); the message stays in the queue`);
    this.name = 'MessageLockLostError';
  }
}

export interface LocalQueueOptions {
  /** How long a receive holds a message (Service Bus `lockDuration`; no auto-renewal here). */
  readonly lockDurationMs: number;
  /** Deliveries before dead-lettering (Service Bus default 10). */
  readonly maxDeliveryCount?: number;
  /** Duplicate detection history (Service Bus `duplicateDetectionHistoryTimeWindow`); 0 or absent = off. */
  readonly duplicateDetectionWindowMs?: number;
  readonly clock?: Clock;
  /** Told about every dead-lettered message. */
  readonly onDeadLetter?: (message: DeadLetteredMessage<never>) => void;
}
