import type { InvocationContextLike } from '../core/invocationKey';
import { ParkReason, type ParkingStore } from '../messaging/ParkingStore';
import { decodeRewardEvent, type RewardEvent } from './rewardEvent';
import type { RewardsLedger } from './RewardsLedger';

/** What one batch did, event by event. */
export interface RewardsBatchReport {
  readonly applied: number;
  readonly duplicates: number;
  readonly parked: number;
  readonly ignored: number;
  /** Points added per customer by this batch. */
  readonly pointsByCustomer: ReadonlyMap<string, number>;
}

export interface RewardsConsumerDeps {
  readonly ledger: RewardsLedger;
  readonly parking: ParkingStore;
  /** The consumer's name: the scope of its event keys. Default `rewards`. */
  readonly consumer?: string;
}

/**
 * The rewards consumer: an Event Hubs batch (`cardinality: 'many'`, one partition, in order) of
 * `PaymentSucceeded` CloudEvents adds loyalty points to customers' balances, each event exactly once.
 *
 * - Key: the CloudEvent `source` + `id`. Never the partition, offset or sequence number: a producer's
 *   retry appends the same event again with a new offset and sequence number, and they name a position in
 *   one hub (a replay from a checkpoint repeats them, a republished event does not).
 * - The marker and the balance change commit in one transaction per customer (`RewardsLedger`); a replay
 *   from the checkpoint, a producer retry or two instances during a partition handover never add twice.
 * - Failure rule: an event no retry can fix (no identity, bad data, an id reused for other data) is
 *   parked with its reason, never dropped; other event types are ignored (not this consumer's). A store
 *   failure, or a failure to park, throws the batch: the trigger's retry policy (retry forever) runs it
 *   again, the customers already applied are duplicates then, and the host never checkpoints past it.
 */
export class RewardsConsumer {
  readonly consumer: string;

  constructor(private readonly deps: RewardsConsumerDeps) {
    this.consumer = deps.consumer ?? 'rewards';
  }

  async handleBatch(events: readonly unknown[], context?: InvocationContextLike): Promise<RewardsBatchReport> {
    const byCustomer = new Map<string, RewardEvent[]>();
    let parked = 0;
    let ignored = 0;
    for (const [index, body] of events.entries()) {
      const decoded = decodeRewardEvent(this.consumer, body, index, context);
      if (decoded.ok) {
        const list = byCustomer.get(decoded.event.customerId) ?? [];
        list.push(decoded.event);
        byCustomer.set(decoded.event.customerId, list);
      } else if (decoded.ignored) ignored++;
      else {
        await this.park(body, index, context, decoded.reason, decoded.detail);
        parked++;
      }
    }
    const results = await Promise.all([...byCustomer].map(async ([customerId, list]) => [customerId, await this.deps.ledger.apply(customerId, list)] as const));
    let applied = 0;
    let duplicates = 0;
    const pointsByCustomer = new Map<string, number>();
    for (const [customerId, result] of results) {
      applied += result.applied.length;
      duplicates += result.duplicates.length;
      pointsByCustomer.set(
        customerId,
        result.applied.reduce((sum, event) => sum + event.points, 0),
      );
      for (const event of result.keyReused) {
        await this.park(
          events[event.index],
          event.index,
          context,
          ParkReason.KeyReused,
          `event ${JSON.stringify(event.key.key)} was applied before with other data`,
        );
        parked++;
      }
    }
    return { applied, duplicates, parked, ignored, pointsByCustomer };
  }

  private async park(body: unknown, index: number, context: InvocationContextLike | undefined, reason: ParkReason, detail: string): Promise<void> {
    const meta = context?.triggerMetadata ?? {};
    const at = (name: string): unknown => (Array.isArray(meta[name]) ? (meta[name] as unknown[])[index] : undefined);
    const partition = (meta.partitionContext as { partitionId?: unknown } | undefined)?.partitionId;
    // Operators find a parked event by its position; parking twice (a replay) overwrites the same row.
    await this.deps.parking.park({
      consumer: this.consumer,
      reason,
      detail,
      info: {
        messageId: `partition ${JSON.stringify(partition ?? null)} sequence ${JSON.stringify(at('sequenceNumberArray') ?? index)}`,
        enqueuedTimeUtc: at('enqueuedTimeUtcArray') as string | undefined,
      },
      body,
    });
  }
}
