import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from 'azure-functions-idempotency/internal';
import { type QueueMessage, type LockedMessage, type DeadLetteredMessage, MessageLockLostError, type LocalQueueOptions } from './queueMessages';
/** The queue's message shapes, options and lock error, kept importable from here (their home is queueMessages.ts). */
export { MessageLockLostError, type DeadLetteredMessage, type LocalQueueOptions, type LockedMessage, type QueueMessage } from './queueMessages';

interface Entry {
  readonly message: QueueMessage;
  readonly sequenceNumber: number;
  readonly enqueuedAtMs: number;
  deliveryCount: number;
  lockToken?: string;
  lockedUntilMs?: number;
  lastError?: string;
}

/**
 * One queue with Service Bus peek-lock semantics, in process (tests and the demo only): `receive` locks the first
 * available message and counts the delivery; `complete` removes it only while the caller's lock is valid; `abandon`
 * and an expired lock make it available again at the head, or dead-letter it at `maxDeliveryCount`; a duplicate-
 * detection window drops a send whose MessageId was sent within it (send side only: it never stops redelivery).
 *
 * ```
 *  send --> [ready] --receive--> locked(token, until) --complete--> gone
 *              ^  ^-----abandon------'   |  '--abandon/expiry at maxDeliveryCount--> DLQ
 *              '------lock expiry--------'
 * ```
 */
export class LocalQueue<Tag = unknown> {
  private readonly ready: Entry[] = [];
  private readonly locked = new Map<number, Entry>();
  private readonly dlq: DeadLetteredMessage<Tag>[] = [];
  private readonly recentIds = new Map<string, number>();
  private readonly waiters = new Set<() => void>();
  private readonly clock: Clock;
  private sequence = 0;
  private closed = false;
  readonly maxDeliveryCount: number;
  readonly stats = {
    sent: 0,
    droppedAsDuplicate: 0,
    deliveries: 0,
    completed: 0,
    abandoned: 0,
    lockExpired: 0,
    lockLost: 0,
    deadLettered: 0,
    resubmitted: 0,
    renewed: 0,
  };

  constructor(
    readonly name: string,
    private readonly options: LocalQueueOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.maxDeliveryCount = options.maxDeliveryCount ?? 10;
  }

  /** Enqueues a message; returns false when duplicate detection dropped it. */
  send(message: QueueMessage<Tag>): boolean {
    const now = this.clock.nowMs();
    const window = this.options.duplicateDetectionWindowMs ?? 0;
    const id = typeof message.messageId === 'string' || typeof message.messageId === 'number' ? String(message.messageId) : undefined;
    if (window > 0 && id !== undefined) {
      const seenAt = this.recentIds.get(id);
      if (seenAt !== undefined && now - seenAt < window) {
        this.stats.droppedAsDuplicate++;
        return false;
      }
      this.recentIds.set(id, now);
    }
    this.stats.sent++;
    this.ready.push({ message, sequenceNumber: ++this.sequence, enqueuedAtMs: now, deliveryCount: 0 });
    this.wake();
    return true;
  }

  /** Waits for a message and locks it; undefined once the queue is closed. */
  async receive(): Promise<LockedMessage<Tag> | undefined> {
    for (;;) {
      if (this.closed) return undefined;
      this.expireLocks();
      const entry = this.ready.shift();
      if (entry) {
        const now = this.clock.nowMs();
        entry.deliveryCount++;
        entry.lockToken = randomUUID();
        entry.lockedUntilMs = now + this.options.lockDurationMs;
        this.locked.set(entry.sequenceNumber, entry);
        this.stats.deliveries++;
        return {
          message: entry.message as QueueMessage<Tag>,
          sequenceNumber: entry.sequenceNumber,
          lockToken: entry.lockToken,
          deliveryCount: entry.deliveryCount,
          lockedUntilMs: entry.lockedUntilMs,
          enqueuedAtMs: entry.enqueuedAtMs,
        };
      }
      await this.waitForWork();
    }
  }

  /** Removes the message. @throws MessageLockLostError when the caller's lock is no longer valid. */
  complete(locked: LockedMessage<Tag>): void {
    const entry = this.ownedEntry(locked);
    this.locked.delete(entry.sequenceNumber);
    this.stats.completed++;
    this.wake();
  }

  /**
   * Renews the caller's lock (Service Bus `RenewMessageLock`, what the Functions host's auto-renewal sends): it
   * now ends `lockDurationMs` from now. @returns the new end. @throws MessageLockLostError when the lock is no longer valid.
   */
  renewLock(locked: LockedMessage<Tag>): number {
    const entry = this.ownedEntry(locked);
    entry.lockedUntilMs = this.clock.nowMs() + this.options.lockDurationMs;
    this.stats.renewed++;
    return entry.lockedUntilMs;
  }

  /**
   * Releases the lock: the message is delivered again at once, or dead-lettered when it reached
   * `maxDeliveryCount`. @throws MessageLockLostError when the caller's lock is no longer valid.
   */
  abandon(locked: LockedMessage<Tag>, error: unknown): void {
    const entry = this.ownedEntry(locked);
    this.locked.delete(entry.sequenceNumber);
    entry.lastError = errorText(error);
    entry.lockToken = undefined;
    this.stats.abandoned++;
    this.makeAvailable(entry);
    this.wake();
  }

  /** The dead-letter queue (messages stay until an operator acts). */
  get deadLetters(): readonly DeadLetteredMessage<Tag>[] {
    return this.dlq;
  }

  /**
   * An operator's resubmission: the dead-lettered messages `select` accepts are sent again as new messages (a new
   * sequence number, delivery count 0; no duplicate detection, as Service Bus Explorer's resubmit). @returns them.
   */
  resubmitDeadLetters(select: (dead: DeadLetteredMessage<Tag>) => boolean = () => true): DeadLetteredMessage<Tag>[] {
    const chosen = this.dlq.filter(select);
    if (chosen.length === 0) return [];
    const keep = this.dlq.filter((d) => !chosen.includes(d));
    this.dlq.length = 0;
    this.dlq.push(...keep);
    const now = this.clock.nowMs();
    for (const dead of chosen) {
      this.ready.push({ message: dead.message, sequenceNumber: ++this.sequence, enqueuedAtMs: now, deliveryCount: 0 });
      this.stats.resubmitted++;
    }
    this.wake();
    return chosen;
  }

  /**
   * A pause longer than the messages' time to live, on a queue that dead-letters on expiration (ours): every message,
   * waiting or locked, goes to the DLQ (`TTLExpiredException`). @returns how many.
   */
  expireAll(): number {
    const entries = [...this.locked.values(), ...this.ready].sort((a, b) => a.sequenceNumber - b.sequenceNumber);
    this.locked.clear();
    this.ready.length = 0;
    for (const entry of entries) {
      entry.lockToken = undefined;
      entry.lastError = 'time to live expired';
      this.deadLetter(entry, 'TTLExpiredException');
    }
    this.wake();
    return entries.length;
  }

  /** Messages waiting or locked (delivered and not yet settled). */
  get activeCount(): number {
    return this.ready.length + this.locked.size;
  }

  /** Wakes every waiting receiver with `undefined`; later receives return `undefined` at once. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  private ownedEntry(locked: LockedMessage<Tag>): Entry {
    const entry = this.locked.get(locked.sequenceNumber);
    if (!entry || entry.lockToken !== locked.lockToken || (entry.lockedUntilMs ?? 0) <= this.clock.nowMs()) {
      this.stats.lockLost++;
      throw new MessageLockLostError(locked.sequenceNumber);
    }
    return entry;
  }

  /** Expired locks: the message is available again (or dead-lettered), in sequence order at the head. */
  private expireLocks(): void {
    const now = this.clock.nowMs();
    const expired = [...this.locked.values()].filter((e) => (e.lockedUntilMs ?? 0) <= now).sort((a, b) => b.sequenceNumber - a.sequenceNumber);
    for (const entry of expired) {
      this.locked.delete(entry.sequenceNumber);
      entry.lockToken = undefined;
      entry.lastError = 'lock expired: the delivery was not settled within the lock duration';
      this.stats.lockExpired++;
      this.makeAvailable(entry);
    }
  }

  private makeAvailable(entry: Entry): void {
    if (entry.deliveryCount >= this.maxDeliveryCount) return this.deadLetter(entry, 'MaxDeliveryCountExceeded');
    this.ready.unshift(entry);
  }

  private deadLetter(entry: Entry, reason: DeadLetteredMessage<Tag>['reason']): void {
    const dead: DeadLetteredMessage<Tag> = {
      message: entry.message as QueueMessage<Tag>,
      sequenceNumber: entry.sequenceNumber,
      deliveryCount: entry.deliveryCount,
      reason,
      lastError: entry.lastError ?? 'lock expired',
    };
    this.dlq.push(dead);
    this.stats.deadLettered++;
    this.options.onDeadLetter?.(dead as DeadLetteredMessage<never>);
  }

  private waitForWork(): Promise<void> {
    const now = this.clock.nowMs();
    let nextExpiry = Infinity;
    for (const entry of this.locked.values()) nextExpiry = Math.min(nextExpiry, entry.lockedUntilMs ?? Infinity);
    const waitMs = Math.max(1, Math.min(1_000, nextExpiry - now + 1));
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      this.waiters.add(done);
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

function errorText(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 500);
  return String(error).slice(0, 500);
}
