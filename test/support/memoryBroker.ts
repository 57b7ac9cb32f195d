import { randomUUID } from 'node:crypto';
import type { DeadLetteredMessage, DeadLetterQueue } from 'azure-functions-idempotency/operator';
import type { FakeClock } from './tables';

/**
 * An in-memory stand-in for one Service Bus queue and its dead-letter sub-queue, for the dead-letter replay's tests
 * (no Service Bus emulator runs here). It keeps the semantics the replay relies on, on the test's clock:
 * - peek-lock: a received message is invisible to other receives until completed, abandoned, or its lock lapses
 *   (`lockDurationMs`); `complete` with a lapsed or superseded lock fails (MessageLockLost) and leaves it there;
 * - duplicate detection: with `duplicateWindowMs` > 0, a send whose MessageId was accepted within the window is dropped
 *   without an error (the sender cannot tell), as Service Bus does on a queue with `requiresDuplicateDetection`;
 * - sequence numbers unique in the queue, and a dead-lettered message keeps its enqueue time.
 * What only the real service gives, and these tests take on trust: the duplicate detection history survives the
 * broker's restarts and failovers (here it lives in this object), locks lapse by the service's clock, and at-least-once
 * delivery with redelivery after a lock lapses while the receiver is gone.
 */
export class MemoryQueue {
  /** Messages in the main queue (a consumer takes them out), every send it accepted, and sends dropped as duplicates. */
  readonly active: StoredMessage[] = [];
  readonly accepted: StoredMessage[] = [];
  readonly dropped: StoredMessage[] = [];
  readonly deadLetters: StoredMessage[] = [];
  private readonly history = new Map<string, number>();
  private sequence = 0;

  constructor(
    readonly name: string,
    private readonly clock: FakeClock,
    readonly options: { readonly lockDurationMs: number; readonly duplicateWindowMs: number },
  ) {}

  /** Sends a message to the main queue; false when duplicate detection dropped it. */
  send(message: { messageId: unknown; body: unknown }): boolean {
    const now = this.clock.nowMs();
    const id = String(message.messageId);
    const seen = this.history.get(id);
    const stored: StoredMessage = { ...message, sequenceNumber: String(++this.sequence), enqueuedAtMs: now, lock: undefined };
    if (this.options.duplicateWindowMs > 0 && seen !== undefined && now - seen < this.options.duplicateWindowMs) {
      this.dropped.push(stored);
      return false;
    }
    this.history.set(id, now);
    this.active.push(stored);
    this.accepted.push(stored);
    return true;
  }

  /** Puts a message straight in the dead-letter queue, as the broker does after `maxDeliveryCount` (enqueued `agoMs` ago). */
  deadLetter(message: { messageId: unknown; body: unknown }, agoMs: number): void {
    const enqueuedAtMs = this.clock.nowMs() - agoMs;
    if (typeof message.messageId === 'string') this.history.set(message.messageId, enqueuedAtMs);
    const stored = { ...message, sequenceNumber: String(++this.sequence), enqueuedAtMs, lock: undefined, deadLetterReason: 'MaxDeliveryCountExceeded' };
    this.deadLetters.push(stored);
  }

  /** The dead-letter sub-queue as the replay sees it. */
  deadLetterQueue(): DeadLetterQueue<LockedMessage> {
    let peeked = 0;
    const visible = (m: StoredMessage) => !m.lock || m.lock.untilMs <= this.clock.nowMs();
    const find = (message: LockedMessage) => this.deadLetters.findIndex((m) => m.sequenceNumber === message.sequenceNumber);
    const holdsLock = (message: LockedMessage) => {
      const stored = this.deadLetters[find(message)];
      if (!stored || !stored.lock || stored.lock.token !== message.lockToken || stored.lock.untilMs <= this.clock.nowMs())
        throw Object.assign(new Error(`MessageLockLost: the lock of sequence ${message.sequenceNumber} was lost`), { code: 'MessageLockLost' });
      return stored;
    };
    return {
      queueName: this.name,
      receive: async (maxMessages) =>
        this.deadLetters
          .filter(visible)
          .slice(0, maxMessages)
          .map((m) => {
            m.lock = { token: randomUUID(), untilMs: this.clock.nowMs() + this.options.lockDurationMs };
            return view(m, m.lock.token);
          }),
      peek: async (maxMessages) => {
        const next = this.deadLetters.filter((m) => Number(m.sequenceNumber) > peeked).slice(0, maxMessages);
        if (next.length > 0) peeked = Number(next[next.length - 1].sequenceNumber);
        return next.map((m) => view(m, undefined));
      },
      complete: async (message) => {
        holdsLock(message);
        this.deadLetters.splice(find(message), 1);
      },
      abandon: async (message) => {
        holdsLock(message).lock = undefined;
      },
      resend: async (message) => {
        const stored = this.deadLetters[find(message)];
        if (!stored) throw new Error(`sequence ${message.sequenceNumber} is not in the dead-letter queue`);
        this.send({ messageId: stored.messageId, body: stored.body });
      },
      close: async () => undefined,
    };
  }

  /** Sends accepted for `messageId`, ever (duplicates dropped are not among them). */
  sendsOf(messageId: string): number {
    return this.accepted.filter((m) => m.messageId === messageId).length;
  }
}

interface StoredMessage {
  readonly messageId: unknown;
  readonly body: unknown;
  readonly sequenceNumber: string;
  readonly enqueuedAtMs: number;
  readonly deadLetterReason?: string;
  lock: { token: string; untilMs: number } | undefined;
}

/** A dead-lettered message as received: its lock token travels with it (the SDK's message carries its own). */
export interface LockedMessage extends DeadLetteredMessage {
  readonly lockToken: string | undefined;
}

function view(m: StoredMessage, lockToken: string | undefined): LockedMessage {
  return { messageId: m.messageId, sequenceNumber: m.sequenceNumber, enqueuedAtMs: m.enqueuedAtMs, deadLetterReason: m.deadLetterReason, lockToken };
}

/** A process that dies at a point of the replay: the `nth` call of `step` throws (`after`: once it has acted). */
export function dyingAt<M extends DeadLetteredMessage>(
  queue: DeadLetterQueue<M>,
  step: 'resend' | 'complete',
  nth: number,
  when: 'before' | 'after',
): DeadLetterQueue<M> {
  let calls = 0;
  const die = () => {
    throw new Error(`process killed at ${step} #${nth} (${when})`);
  };
  const wrapped = async (message: M) => {
    calls++;
    if (calls === nth && when === 'before') die();
    await queue[step](message);
    if (calls === nth && when === 'after') die();
  };
  return { ...queue, [step]: wrapped };
}
