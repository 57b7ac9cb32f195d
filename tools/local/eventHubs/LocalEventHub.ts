import { createHash } from 'node:crypto';

/** One event as a partition keeps it: its position (sequence number, offset) is assigned on append. */
export interface StoredEvent {
  readonly sequenceNumber: number;
  readonly offset: string;
  readonly enqueuedTimeUtc: string;
  readonly partitionKey: string | undefined;
  readonly body: unknown;
  /** Application properties (e.g. `cloudEvents:*` in binary mode). */
  readonly properties: Readonly<Record<string, unknown>>;
}

/**
 * An Event Hub in process memory for tests and the demo: append-only partitions; an event with a partition key lands
 * in the partition its hash picks; a producer's retry is a second `send` (a new sequence number, the same body).
 */
export class LocalEventHub {
  readonly partitions: StoredEvent[][];
  private nextRoundRobin = 0;

  constructor(
    readonly name: string,
    readonly partitionCount: number,
    readonly namespace = 'local.servicebus.windows.net',
  ) {
    this.partitions = Array.from({ length: partitionCount }, () => []);
  }

  /** Appends an event; returns its partition and sequence number. */
  send(body: unknown, options: { partitionKey?: string; properties?: Record<string, unknown> } = {}): { partitionId: string; sequenceNumber: number } {
    const index =
      options.partitionKey === undefined
        ? this.nextRoundRobin++ % this.partitionCount
        : createHash('sha256').update(options.partitionKey).digest().readUInt32BE(0) % this.partitionCount;
    const partition = this.partitions[index];
    const sequenceNumber = partition.length;
    partition.push({
      sequenceNumber,
      offset: String(sequenceNumber * 1024),
      enqueuedTimeUtc: new Date().toISOString(),
      partitionKey: options.partitionKey,
      body: structuredClone(body),
      properties: { ...(options.properties ?? {}) },
    });
    return { partitionId: String(index), sequenceNumber };
  }

  /** Events of `partitionId` after `afterSequence` (-1: from the start), at most `max`. */
  read(partitionId: string, afterSequence: number, max: number): StoredEvent[] {
    return this.partitions[Number(partitionId)].slice(afterSequence + 1, afterSequence + 1 + max);
  }

  get partitionIds(): string[] {
    return this.partitions.map((_, i) => String(i));
  }
}
