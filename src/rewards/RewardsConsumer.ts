import type { InvocationContextLike } from '../core/invocationKey';
import { ParkReason, type ParkingStore } from '../messaging/ParkingStore';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';
import { decodeRewardEvent, type RewardEvent } from './rewardEvent';
import type { RewardsLedger } from './RewardsLedger';

/** What one batch did, event by event. */
export interface RewardsBatchReport {
  readonly applied: number;
  readonly duplicates: number;
  /** Of the duplicates, those read again at the place they were applied from (a replay from a checkpoint). */
  readonly replays: number;
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
  /**
   * Counts per batch: `idempotency.claims` (events decoded), `idempotency.duplicates` (reason `replay`: read
   * again at the same partition and sequence number after a checkpoint; `resend`: a producer's second copy),
   * `messages.parked` (by reason); dimensions `consumer`, `partitionId`. Default: none.
   */
  readonly telemetry?: Telemetry;
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
    let replays = 0;
    const pointsByCustomer = new Map<string, number>();
    for (const [customerId, result] of results) {
      applied += result.applied.length;
      duplicates += result.duplicates.length;
      replays += result.replays.length;
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
    this.countBatch(context, { decoded: applied + duplicates + results.reduce((n, [, r]) => n + r.keyReused.length, 0), duplicates, replays });
    return { applied, duplicates, replays, parked, ignored, pointsByCustomer };
  }

  private countBatch(context: InvocationContextLike | undefined, counts: { decoded: number; duplicates: number; replays: number }): void {
    const telemetry = this.deps.telemetry;
    if (!telemetry) return;
    const partitionId = partitionOf(context);
    if (counts.decoded > 0) telemetry.count(MetricNames.claims, { consumer: this.consumer, partitionId }, counts.decoded);
    if (counts.replays > 0) telemetry.count(MetricNames.duplicates, { consumer: this.consumer, reason: 'replay', partitionId }, counts.replays);
    const resends = counts.duplicates - counts.replays;
    if (resends > 0) telemetry.count(MetricNames.duplicates, { consumer: this.consumer, reason: 'resend', partitionId }, resends);
  }

  private async park(body: unknown, index: number, context: InvocationContextLike | undefined, reason: ParkReason, detail: string): Promise<void> {
    const meta = context?.triggerMetadata ?? {};
    const at = (name: string): unknown => (Array.isArray(meta[name]) ? (meta[name] as unknown[])[index] : undefined);
    const partition = partitionOf(context);
    // Operators find a parked event by its position; parking twice (a replay) overwrites the same row.
    const messageId = `partition ${JSON.stringify(partition)} sequence ${JSON.stringify(at('sequenceNumberArray') ?? index)}`;
    await this.deps.parking.park({
      consumer: this.consumer,
      reason,
      detail,
      info: { messageId, enqueuedTimeUtc: at('enqueuedTimeUtcArray') as string | undefined },
      body,
    });
    this.deps.telemetry?.count(MetricNames.parked, { consumer: this.consumer, reason, partitionId: partition });
    // The same fields as a queue consumer's parked line (infra/monitoring "Parked messages (details)"); never the payload.
    this.deps.telemetry?.log('warn', `event parked: ${reason}`, { consumer: this.consumer, outcome: 'parked', reason, messageId, partitionId: partition });
  }
}

/** The batch's partition (`partitionContext.partitionId`), `unknown` without one. */
function partitionOf(context: InvocationContextLike | undefined): string {
  const partitionId = (context?.triggerMetadata?.partitionContext as { partitionId?: unknown } | undefined)?.partitionId;
  return typeof partitionId === 'string' ? partitionId : 'unknown';
}
