import { randomUUID } from 'node:crypto';
import { delay as sleep } from '../../fakeProvider/random';
import type { BlobCheckpointStore, Ownership } from './BlobCheckpointStore';
import type { LocalEventHub, StoredEvent } from './LocalEventHub';

/** What the host hands a `cardinality: 'many'` handler: the bodies and the trigger metadata the v4 worker builds. */
export type BatchHandler = (bodies: unknown[], context: { triggerMetadata: Record<string, unknown> }) => Promise<unknown>;

export interface HostOptions {
  readonly maxBatchSize?: number;
  /** Ownership not renewed for this long may be taken by another host. */
  readonly ownershipExpiryMs?: number;
  /** How often the host balances partitions and looks for events. */
  readonly pollMs?: number;
  /** Pause before a failed batch runs again (the trigger's retry policy: retry forever). */
  readonly retryDelayMs?: number;
}

/**
 * A Functions host's Event Hubs listener, locally: it claims a fair share of the partitions through the ownership
 * blobs (taking over expired ones), hands each owned partition's batches to the handler in order from its checkpoint,
 * and checkpoints a batch only after the handler returned (a batch that throws runs again, forever). `crash()` stops
 * at once: the next owner replays from the last checkpoint, as after a real host crash or a partition move.
 */
export class LocalEventHubsHost {
  readonly ownerId = randomUUID();
  private readonly owned = new Map<string, Ownership>();
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly hub: LocalEventHub,
    private readonly store: BlobCheckpointStore,
    private readonly handler: BatchHandler,
    private readonly hostCount: () => number,
    private readonly options: HostOptions = {},
  ) {}

  start(): this {
    this.running = true;
    this.loop = this.run();
    return this;
  }

  /** Stops at once, as a crash: nothing more is checkpointed. */
  async crash(): Promise<void> {
    this.running = false;
    await this.loop?.catch(() => undefined);
  }

  private async run(): Promise<void> {
    const pollMs = this.options.pollMs ?? 50;
    while (this.running) {
      await this.balance();
      let delivered = false;
      for (const partitionId of [...this.owned.keys()]) {
        if (!this.running) return;
        delivered = (await this.deliver(partitionId)) || delivered;
      }
      if (!delivered) await sleep(pollMs);
    }
  }

  /** Renews what it owns; claims unowned or expired partitions up to its fair share. */
  private async balance(): Promise<void> {
    const expiryMs = this.options.ownershipExpiryMs ?? 1_000;
    const fairShare = Math.ceil(this.hub.partitionCount / Math.max(1, this.hostCount()));
    for (const partitionId of this.hub.partitionIds) {
      const current = await this.store.ownershipOf(partitionId);
      const mine = current?.ownerId === this.ownerId;
      const expired = !current || current.ownerId === '' || Date.now() - current.lastModifiedMs > expiryMs;
      if (mine || (expired && this.owned.size < fairShare)) {
        if (await this.store.claim(partitionId, this.ownerId, current)) {
          this.owned.set(partitionId, (await this.store.ownershipOf(partitionId))!);
          continue;
        }
      }
      this.owned.delete(partitionId); // not ours (any more)
    }
  }

  /** One batch of a partition, retried until the handler returns. @returns whether there was one. */
  private async deliver(partitionId: string): Promise<boolean> {
    const after = await this.store.checkpointOf(partitionId);
    const events = this.hub.read(partitionId, after, this.options.maxBatchSize ?? 10);
    if (events.length === 0) return false;
    for (;;) {
      if (!this.running || !this.owned.has(partitionId)) return true;
      try {
        await this.handler(
          events.map((event) => structuredClone(event.body)),
          { triggerMetadata: this.metadata(partitionId, events) },
        );
      } catch {
        await sleep(this.options.retryDelayMs ?? 20);
        continue;
      }
      if (!this.running) return true; // crashed while the handler ran: no checkpoint
      const last = events[events.length - 1];
      await this.store.checkpoint(partitionId, last.sequenceNumber, last.offset);
      return true;
    }
  }

  private metadata(partitionId: string, events: readonly StoredEvent[]): Record<string, unknown> {
    return {
      partitionContext: { fullyQualifiedNamespace: this.hub.namespace, eventHubName: this.hub.name, consumerGroup: '$Default', partitionId },
      sequenceNumberArray: events.map((e) => e.sequenceNumber),
      offsetArray: events.map((e) => e.offset),
      enqueuedTimeUtcArray: events.map((e) => e.enqueuedTimeUtc),
      partitionKeyArray: events.map((e) => e.partitionKey),
      propertiesArray: events.map((e) => ({ ...e.properties })),
      systemPropertiesArray: events.map((e) => ({ SequenceNumber: e.sequenceNumber, Offset: e.offset, PartitionKey: e.partitionKey })),
    };
  }
}
