import { LocalQueue, MessageLockLostError, type LocalQueueOptions, type LockedMessage, type QueueMessage } from './LocalQueue';

/** Trigger metadata of one delivery, as the Service Bus trigger passes it (camel-cased keys). */
export interface DeliveryMeta {
  readonly messageId?: unknown;
  readonly deliveryCount: number;
  readonly correlationId?: string;
  /** The message's application properties (`{}` when the producer set none, as the trigger passes them). */
  readonly applicationProperties: Readonly<Record<string, unknown>>;
  readonly sequenceNumber: number;
  readonly lockToken: string;
  readonly enqueuedTimeUtc: string;
}

/** A consumer the engine drives: a queue and the app's handler (resolving completes the message, rejecting abandons it). */
export interface QueueConsumer<Result = unknown> {
  readonly name: string;
  readonly queue: string;
  deliver(body: unknown, meta: DeliveryMeta): Promise<Result>;
}

/** What became of one delivery. */
export type DeliveryEvent<Tag = unknown> =
  | { readonly kind: 'completed'; readonly consumer: string; readonly locked: LockedMessage<Tag>; readonly result: unknown }
  /** The handler threw: abandoned (redelivered at once, or dead-lettered at maxDeliveryCount). */
  | { readonly kind: 'abandoned'; readonly consumer: string; readonly locked: LockedMessage<Tag>; readonly error: unknown }
  /** The handler's process died (injected crash): nothing settled, the lock lapses, then redelivery. */
  | { readonly kind: 'crashed'; readonly consumer: string; readonly locked: LockedMessage<Tag>; readonly error: unknown }
  /** The handler returned but its ack was lost: the lock lapses, then redelivery. */
  | { readonly kind: 'ackLost'; readonly consumer: string; readonly locked: LockedMessage<Tag>; readonly result: unknown }
  /** The handler finished after its lock expired: settling failed, the message stays in the queue. */
  | { readonly kind: 'lockLost'; readonly consumer: string; readonly locked: LockedMessage<Tag>; readonly result?: unknown; readonly error?: unknown };

export interface EngineHooks<Tag> {
  /** True when a handler error stands for the death of its process (the message is left locked). */
  readonly isCrash?: (error: unknown) => boolean;
  /** Called after the handler returned; true = the ack is lost (fault injection). */
  readonly loseAck?: (locked: LockedMessage<Tag>, consumer: string) => boolean;
  readonly onDelivery?: (event: DeliveryEvent<Tag>) => void;
  /** Milliseconds the receiver stalls before calling the handler (a slow handler; > lock duration loses the lock). */
  readonly stallBeforeHandler?: (locked: LockedMessage<Tag>, consumer: string) => number;
  /** Lock auto-renewal while the handler runs, as the host does: `beforeExpiryMs` before the end, up to `maxDurationMs`. */
  readonly autoRenewLock?: { readonly beforeExpiryMs: number; readonly maxDurationMs: number };
}

/**
 * A local delivery engine with Service Bus semantics for the demo and tests: named {@link LocalQueue}s and N competing
 * receivers per consumer, one message at a time each, settling as the trigger does (return completes, throw abandons).
 */
export class LocalServiceBus<Tag = unknown> {
  private readonly queues = new Map<string, LocalQueue<Tag>>();
  private readonly loops: Promise<void>[] = [];
  private inFlightCount = 0;

  constructor(
    private readonly queueOptions: LocalQueueOptions,
    private readonly hooks: EngineHooks<Tag> = {},
  ) {}

  /** The queue of that name (created on first use with the engine's options). */
  queue(name: string): LocalQueue<Tag> {
    let queue = this.queues.get(name);
    if (!queue) this.queues.set(name, (queue = new LocalQueue<Tag>(name, this.queueOptions)));
    return queue;
  }

  send(queue: string, message: QueueMessage<Tag>): boolean {
    return this.queue(queue).send(message);
  }

  /** Starts `count` competing receivers for the consumer. */
  start(consumer: QueueConsumer, count: number): void {
    const queue = this.queue(consumer.queue);
    for (let i = 0; i < count; i++) this.loops.push(this.receiveLoop(consumer, queue));
  }

  /** Handler calls running now. */
  get inFlight(): number {
    return this.inFlightCount;
  }

  /** True when no queue holds a message (ready or locked) and no handler runs. */
  get idle(): boolean {
    return this.inFlightCount === 0 && [...this.queues.values()].every((q) => q.activeCount === 0);
  }

  /**
   * Resolves once the bus is {@link idle}, polling every 20 ms. @throws Error after `capMs` with every queue's counts
   * (a consumer that never settles fails the run with what the bus saw instead of hanging it).
   */
  async whenIdle(capMs: number): Promise<void> {
    const cap = Date.now() + capMs;
    while (!this.idle) {
      if (Date.now() >= cap) {
        const counts = this.allQueues().map((q) => `${q.name}: ${JSON.stringify(q.stats)}, ${q.activeCount} ready or locked`);
        throw new Error(
          `the local Service Bus was still busy after ${Math.round(capMs / 1000)} s (${this.inFlightCount} handler(s) running): ${counts.join('; ')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Every queue, for reports. */
  allQueues(): LocalQueue<Tag>[] {
    return [...this.queues.values()];
  }

  /** Closes the queues and waits for the receivers to finish their current message. */
  async stop(): Promise<void> {
    for (const queue of this.queues.values()) queue.close();
    await Promise.allSettled(this.loops);
  }

  private async receiveLoop(consumer: QueueConsumer, queue: LocalQueue<Tag>): Promise<void> {
    for (;;) {
      const locked = await queue.receive();
      if (!locked) return;
      this.inFlightCount++;
      try {
        await this.handleOne(consumer, queue, locked);
      } finally {
        this.inFlightCount--;
      }
    }
  }

  /** Starts the lock's auto-renewal (when configured); returns the function that stops it. */
  private renewWhileRunning(queue: LocalQueue<Tag>, locked: LockedMessage<Tag>): () => void {
    const renew = this.hooks.autoRenewLock;
    if (!renew) return () => undefined;
    const until = Date.now() + renew.maxDurationMs;
    let timer: NodeJS.Timeout | undefined;
    const schedule = (lockedUntilMs: number) => {
      const at = lockedUntilMs - renew.beforeExpiryMs;
      if (at >= until) return;
      timer = setTimeout(
        () => {
          try {
            schedule(queue.renewLock(locked));
          } catch {
            // The lock is gone (expired or settled): nothing more to renew.
          }
        },
        Math.max(0, at - Date.now()),
      );
    };
    schedule(locked.lockedUntilMs);
    return () => clearTimeout(timer);
  }

  private async handleOne(consumer: QueueConsumer, queue: LocalQueue<Tag>, locked: LockedMessage<Tag>): Promise<void> {
    const emit = (event: DeliveryEvent<Tag>) => this.hooks.onDelivery?.(event);
    const meta: DeliveryMeta = {
      messageId: locked.message.messageId,
      deliveryCount: locked.deliveryCount,
      correlationId: locked.message.correlationId,
      applicationProperties: locked.message.applicationProperties ?? {},
      sequenceNumber: locked.sequenceNumber,
      lockToken: locked.lockToken,
      enqueuedTimeUtc: new Date(locked.enqueuedAtMs).toISOString(),
    };
    const stallMs = this.hooks.stallBeforeHandler?.(locked, consumer.name) ?? 0;
    if (stallMs > 0) await new Promise((resolve) => setTimeout(resolve, stallMs));
    let result: unknown;
    const stopRenewing = this.renewWhileRunning(queue, locked);
    try {
      result = await consumer.deliver(locked.message.body, meta);
    } catch (error) {
      stopRenewing();
      if (this.hooks.isCrash?.(error)) return emit({ kind: 'crashed', consumer: consumer.name, locked, error });
      try {
        queue.abandon(locked, error);
        return emit({ kind: 'abandoned', consumer: consumer.name, locked, error });
      } catch (settleError) {
        if (settleError instanceof MessageLockLostError) return emit({ kind: 'lockLost', consumer: consumer.name, locked, error });
        throw settleError;
      }
    }
    stopRenewing();
    if (this.hooks.loseAck?.(locked, consumer.name)) return emit({ kind: 'ackLost', consumer: consumer.name, locked, result });
    try {
      queue.complete(locked);
      emit({ kind: 'completed', consumer: consumer.name, locked, result });
    } catch (settleError) {
      if (settleError instanceof MessageLockLostError) return emit({ kind: 'lockLost', consumer: consumer.name, locked, result });
      throw settleError;
    }
  }
}
