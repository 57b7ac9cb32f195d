/**
 * A dead-lettered message as the replay sees it. Its content travels opaque from the dead-letter queue to the resend:
 * the replay never reads it and never prints it (key and digest only).
 */
export interface DeadLetteredMessage {
  /** The MessageId as the broker holds it (the key of the consumer's record: `keyFromMessageId`). */
  readonly messageId: unknown;
  /** The broker's sequence number of this dead-lettered copy, as text (unique in its queue). */
  readonly sequenceNumber: string;
  /** When this copy was enqueued in the main queue (epoch ms), for the duplicate detection window; undefined if unknown. */
  readonly enqueuedAtMs: number | undefined;
  /** Why the broker dead-lettered it (`MaxDeliveryCountExceeded`, `TTLExpiredException`...), for the report. */
  readonly deadLetterReason: string | undefined;
}

/**
 * What the dead-letter replay needs of a broker, with Service Bus semantics: the dead-letter sub-queue of one queue,
 * read under a peek-lock, and the main queue to send copies to. The real one is {@link serviceBusDeadLetterQueue}
 * (`@azure/service-bus`); tests use an in-memory broker with the same semantics.
 *
 * Semantics relied on: a received message is invisible to other receivers until it is completed, abandoned or its lock
 * lapses (then it comes back); `complete` removes it for good and fails once its lock is lost; a copy is sent with the
 * same MessageId, so a queue with duplicate detection drops a second copy sent within its window.
 */
export interface DeadLetterQueue<M extends DeadLetteredMessage = DeadLetteredMessage> {
  /** The main queue's name (its dead-letter sub-queue is read). */
  readonly queueName: string;
  /** Up to `maxMessages` dead-lettered messages under a peek-lock; none when none came within `maxWaitMs`. */
  receive(maxMessages: number, maxWaitMs: number): Promise<readonly M[]>;
  /** Up to `maxMessages` dead-lettered messages without a lock (a dry run), each call the next ones. */
  peek(maxMessages: number): Promise<readonly M[]>;
  /** Removes a received message from the dead-letter queue. @throws when its lock was lost (it is back in the queue) */
  complete(message: M): Promise<void>;
  /** Gives a received message back: its lock released, visible again at once. */
  abandon(message: M): Promise<void>;
  /** Sends a copy of `message` (content, MessageId, properties) to the main queue. */
  resend(message: M): Promise<void>;
  close(): Promise<void>;
}
