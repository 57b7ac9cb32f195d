import { BlobServiceClient, RestError, type ContainerClient } from '@azure/storage-blob';
import type { LocalEventHub } from './LocalEventHub';

/** The container the Functions host keeps Event Hubs checkpoints and ownership in. */
export const CHECKPOINT_CONTAINER = 'azure-webjobs-eventhub';

/** Who owns a partition, since when (the blob's last write), and the version to claim it on. */
export interface Ownership {
  readonly partitionId: string;
  readonly ownerId: string;
  readonly lastModifiedMs: number;
  readonly etag: string;
}

/**
 * Checkpoints and partition ownership on Azurite's blobs, in the layout the Functions extension's checkpoint store
 * uses (`<namespace>/<hub>/<consumer group>/checkpoint|ownership/<partition>`, lower-cased). Ownership changes only
 * with `If-Match` (`If-None-Match: *` for the first claim), so two hosts never both win a partition.
 */
export class BlobCheckpointStore {
  private readonly container: ContainerClient;

  constructor(
    connectionString: string,
    private readonly namespace: string,
    private readonly hub: string,
    private readonly consumerGroup: string,
  ) {
    this.container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(CHECKPOINT_CONTAINER);
  }

  async ensureContainer(): Promise<void> {
    await this.container.createIfNotExists();
  }

  private blob(kind: 'checkpoint' | 'ownership', partitionId: string) {
    return this.container.getBlockBlobClient(`${this.namespace}/${this.hub}/${this.consumerGroup}/${kind}/${partitionId}`.toLowerCase());
  }

  /** True when every partition of `hub` is checkpointed at its last event (the hosts have caught up). */
  async caughtUpWith(hub: Pick<LocalEventHub, 'partitionIds' | 'partitions'>): Promise<boolean> {
    const atEnd = await Promise.all(hub.partitionIds.map(async (p) => (await this.checkpointOf(p)) === hub.partitions[Number(p)].length - 1));
    return atEnd.every(Boolean);
  }

  /** The last checkpointed sequence number of a partition (-1: none). */
  async checkpointOf(partitionId: string): Promise<number> {
    try {
      const properties = await this.blob('checkpoint', partitionId).getProperties();
      return Number(properties.metadata?.sequencenumber ?? -1);
    } catch (error) {
      if (error instanceof RestError && error.statusCode === 404) return -1;
      throw error;
    }
  }

  /** Records that every event up to `sequenceNumber` (at `offset`) is done. */
  async checkpoint(partitionId: string, sequenceNumber: number, offset: string): Promise<void> {
    await this.blob('checkpoint', partitionId).upload('', 0, { metadata: { sequencenumber: String(sequenceNumber), offset } });
  }

  async ownershipOf(partitionId: string): Promise<Ownership | undefined> {
    try {
      const properties = await this.blob('ownership', partitionId).getProperties();
      return {
        partitionId,
        ownerId: properties.metadata?.ownerid ?? '',
        lastModifiedMs: properties.lastModified?.getTime() ?? 0,
        etag: properties.etag ?? '',
      };
    } catch (error) {
      if (error instanceof RestError && error.statusCode === 404) return undefined;
      throw error;
    }
  }

  /** Claims (or renews) a partition on the version last seen; false when someone else wrote it first. */
  async claim(partitionId: string, ownerId: string, seen: Ownership | undefined): Promise<boolean> {
    try {
      await this.blob('ownership', partitionId).upload('', 0, {
        metadata: { ownerid: ownerId },
        conditions: seen ? { ifMatch: seen.etag } : { ifNoneMatch: '*' },
      });
      return true;
    } catch (error) {
      if (error instanceof RestError && (error.statusCode === 412 || error.statusCode === 409)) return false;
      throw error;
    }
  }
}
