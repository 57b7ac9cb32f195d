import { StoreUnavailableError, type InvocationContextLike } from 'azure-functions-idempotency';
import { bodyBytes } from '../messaging/bodyBytes';
import { DEFAULT_MAX_STRIKES, failureSignature, type FailureStrikes } from '../messaging/failureStrikes';
import { ParkReason, type ParkingStore } from '../messaging/ParkingStore';
import { misconfigurationOf } from '../messaging/storeMisconfiguration';
import type { BatchAttempts, OpenAttempt } from '../messaging/batchAttempts';
import { reportBatchFailure, reportUnanswered } from './batchFailure';
import { MetricNames, type Telemetry } from '../telemetry/Telemetry';
import { createHash } from 'node:crypto';
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
   * `messages.parked` (by reason), `idempotency.key_reuse` (an identity under another payload: alerted),
   * `messages.batch_failures` (a thrown batch, kind `unavailable`, `misconfigured` or `error`: alerted when a partition
   * stops moving), `messages.store_misconfigured` (a table the consumer cannot use: with `table`, `status`, `code`;
   * alerted); dimensions `consumer`, `partitionId`. Default: none.
   */
  readonly telemetry?: Telemetry;
  /** Where a batch's failures are counted across retries; without it a failing batch is only thrown (retried). */
  readonly strikes?: FailureStrikes;
  /**
   * Where each batch's invocation says it started and answered, so one that ended without an answer (a function
   * timeout, a worker crash) counts as a strike when the batch is seen again. Without it such a batch is retried in silence.
   */
  readonly attempts?: BatchAttempts;
  /** Failures of one batch, the same way, before its events are taken one by one and the failing ones parked. Default 3. */
  readonly maxStrikes?: number;
}

/** The failure signature of invocations that ended without an answer. */
const NO_ANSWER = 'no answer: function timeout or worker crash';

type Counts = { applied: RewardEvent[]; duplicates: number; replays: number; parked: number; ignored: number; decoded: number; total: number };

/**
 * The rewards consumer: an Event Hubs batch (`cardinality: 'many'`, one partition, in order) of
 * `PaymentSucceeded` CloudEvents adds loyalty points to customers' balances, each event exactly once.
 *
 * - Key: the CloudEvent `source` + `id`, the consumer's (not the customer's): one identity is applied at most
 *   once whatever its payload; another payload under it is parked `key-reused` and counted (alerted). Never the
 *   partition, offset or sequence number (a producer's retry appends the same event with new ones).
 * - The marker and the balance change commit in one transaction per customer (`RewardsLedger`), after the
 *   identity is reserved for the payload; a replay, a producer retry or two instances never add twice.
 * - Failure rule: an event no retry can fix (no identity, bad data, too deep or too large, an id reused) is parked
 *   with its reason, never dropped; other event types are ignored. A store that is unavailable throws the batch:
 *   the trigger's retry policy (retry forever) runs it again and the host never checkpoints past it. So does a table
 *   it cannot use (403, 404 `TableNotFound`, 409 `TableBeingDeleted`: `misconfigurationOf`), never a strike, never
 *   parked, counted and logged naming the table and the status. Any other
 *   failure throws too, and is counted (`FailureStrikes`): the `maxStrikes`-th time the same batch fails the same
 *   way, its events are taken one by one and those that still fail are parked `repeated-failure`: no single event
 *   can stop a partition.
 */
export class RewardsConsumer {
  readonly consumer: string;

  constructor(private readonly deps: RewardsConsumerDeps) {
    this.consumer = deps.consumer ?? 'rewards';
  }

  async handleBatch(events: readonly unknown[], context?: InvocationContextLike): Promise<RewardsBatchReport> {
    const partitionId = partitionOf(context);
    let open: OpenAttempt | undefined;
    try {
      open = this.deps.attempts && events.length > 0 ? await this.deps.attempts.open(this.consumer, partitionId, placeOf(events, context)) : undefined;
    } catch (error) {
      reportBatchFailure(this.deps.telemetry, this.consumer, partitionId, error);
      throw error;
    }
    try {
      return await this.attempt(events, context, partitionId, open);
    } finally {
      // Returned or thrown, this invocation answered: a replay of the batch is not a no-answer strike. Failing to say so
      // costs at most one false strike (a batch run event by event: still correct).
      await open?.answered().catch(() => undefined);
    }
  }

  private async attempt(
    events: readonly unknown[],
    context: InvocationContextLike | undefined,
    partitionId: string,
    open: OpenAttempt | undefined,
  ): Promise<RewardsBatchReport> {
    const maxStrikes = this.deps.maxStrikes ?? DEFAULT_MAX_STRIKES;
    if (open && open.unanswered > 0) {
      reportUnanswered(this.deps.telemetry, this.consumer, partitionId, open.unanswered);
      if (open.unanswered >= maxStrikes) return this.runBatch(events, context, NO_ANSWER, open);
    }
    try {
      return await this.runBatch(events, context);
    } catch (error) {
      const kind = reportBatchFailure(this.deps.telemetry, this.consumer, partitionId, error);
      if (kind !== 'error' || !this.deps.strikes || events.length === 0) throw error;
      const signature = failureSignature(error);
      const strikes = await this.deps.strikes.record(this.consumer, placeOf(events, context), signature).catch(() => 0);
      if (strikes < maxStrikes) throw error;
      this.deps.telemetry?.log('warn', `batch failed ${strikes} times the same way: its events taken one by one`, {
        consumer: this.consumer,
        partitionId,
        reason: ParkReason.RepeatedFailure,
      });
      return this.runBatch(events, context, signature, open);
    }
  }

  /**
   * The batch at once; or, with `isolating` (a signature), event by event, parking those that fail, and marking on
   * `open` which event it is on: the event an earlier invocation ended on without an answer (`open.diedAt`) is parked.
   */
  private async runBatch(
    events: readonly unknown[],
    context: InvocationContextLike | undefined,
    isolating?: string,
    open?: OpenAttempt,
  ): Promise<RewardsBatchReport> {
    const counts: Counts = { applied: [], duplicates: 0, replays: 0, parked: 0, ignored: 0, decoded: 0, total: events.length };
    const decoded: RewardEvent[] = [];
    for (const [index, body] of events.entries()) {
      let event: ReturnType<typeof decodeRewardEvent>;
      try {
        event = decodeRewardEvent(this.consumer, body, index, context, events.length);
      } catch (error) {
        if (isolating === undefined) throw error;
        await this.park(body, index, context, ParkReason.RepeatedFailure, `decoding failed: ${failureSignature(error)}`, counts, true);
        continue;
      }
      if (event.ok) decoded.push(event.event);
      else if (event.ignored) counts.ignored++;
      else await this.park(body, index, context, event.reason, event.detail, counts, isolating !== undefined);
    }
    const groups = isolating === undefined ? [decoded] : decoded.map((event) => [event]);
    for (const group of groups) {
      if (isolating !== undefined && open?.diedAt === group[0].index) {
        const detail = `the invocation ended without an answer (function timeout or worker crash) ${open.unanswered} times, the last one on this event`;
        await this.park(events[group[0].index], group[0].index, context, ParkReason.RepeatedFailure, detail, counts, true);
        continue;
      }
      try {
        if (isolating !== undefined) await open?.progress(group[0].index);
        await this.apply(events, group, context, counts);
      } catch (error) {
        if (isolating === undefined || error instanceof StoreUnavailableError || misconfigurationOf(error)) throw error;
        const detail = `failed the same way ${this.deps.maxStrikes ?? DEFAULT_MAX_STRIKES} times: ${failureSignature(error)}`;
        await this.park(events[group[0].index], group[0].index, context, ParkReason.RepeatedFailure, detail, counts, true);
      }
    }
    this.countBatch(context, counts);
    const pointsByCustomer = new Map<string, number>();
    for (const event of counts.applied) pointsByCustomer.set(event.customerId, (pointsByCustomer.get(event.customerId) ?? 0) + event.points);
    const { duplicates, replays, parked, ignored } = counts;
    return { applied: counts.applied.length, duplicates, replays, parked, ignored, pointsByCustomer };
  }

  private async apply(events: readonly unknown[], group: readonly RewardEvent[], context: InvocationContextLike | undefined, counts: Counts): Promise<void> {
    const result = await this.deps.ledger.applyBatch(group);
    counts.applied.push(...result.applied);
    counts.duplicates += result.duplicates.length;
    counts.replays += result.replays.length;
    counts.decoded += group.length;
    for (const event of result.keyReused) {
      const detail = `event ${JSON.stringify(event.key.key)} is held by another payload (digest ${event.digest.slice(0, 16)} differs)`;
      await this.park(events[event.index], event.index, context, ParkReason.KeyReused, detail, counts);
      this.deps.telemetry?.count(MetricNames.keyReuse, { consumer: this.consumer, partitionId: partitionOf(context) });
    }
  }

  private countBatch(context: InvocationContextLike | undefined, counts: Counts): void {
    const telemetry = this.deps.telemetry;
    if (!telemetry) return;
    const partitionId = partitionOf(context);
    if (counts.decoded > 0) telemetry.count(MetricNames.claims, { consumer: this.consumer, partitionId }, counts.decoded);
    if (counts.replays > 0) telemetry.count(MetricNames.duplicates, { consumer: this.consumer, reason: 'replay', partitionId }, counts.replays);
    const resends = counts.duplicates - counts.replays;
    if (resends > 0) telemetry.count(MetricNames.duplicates, { consumer: this.consumer, reason: 'resend', partitionId }, resends);
  }

  /** Parks one event; `lastResort`: if its body cannot be parked (not an outage), parks its place and reason without it. */
  private async park(
    body: unknown,
    index: number,
    context: InvocationContextLike | undefined,
    reason: ParkReason,
    detail: string,
    counts: Counts,
    lastResort = false,
  ) {
    const meta = context?.triggerMetadata ?? {};
    // Metadata longer than the batch (a dataType 'string' batch lost an empty body) is never read by position.
    const aligned = Object.entries(meta).every(([name, value]) => !name.endsWith('Array') || !Array.isArray(value) || value.length <= counts.total);
    const at = (name: string): unknown => (aligned && Array.isArray(meta[name]) ? (meta[name] as unknown[])[index] : undefined);
    const partition = partitionOf(context);
    // Operators find a parked event by its position; parking twice (a replay) overwrites the same row.
    const sequence = at('sequenceNumberArray');
    const messageId = `partition ${JSON.stringify(partition)} ${sequence === undefined ? `index ${index} of a batch whose metadata does not line up` : `sequence ${JSON.stringify(sequence)}`}`;
    const info = { messageId, enqueuedTimeUtc: at('enqueuedTimeUtcArray') as string | undefined };
    // Its application properties (a binary-mode CloudEvent's identity) go with it, so it can be resubmitted as it was.
    const properties = at('propertiesArray');
    const own = typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? (properties as Record<string, unknown>) : undefined;
    try {
      await this.deps.parking.park({ consumer: this.consumer, reason, detail, info, body, properties: own });
    } catch (error) {
      if (!lastResort || error instanceof StoreUnavailableError || misconfigurationOf(error)) throw error;
      const without = `${detail}; body not kept (${failureSignature(error)}), digest ${createHash('sha256').update(bodyBytes(body)).digest('hex')}`;
      await this.deps.parking.park({ consumer: this.consumer, reason, detail: without, info, body: undefined, properties: own });
    }
    counts.parked++;
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

/** Where a batch starts: its partition and first sequence number (a retry starts there again), else its first body's digest. */
function placeOf(events: readonly unknown[], context: InvocationContextLike | undefined): string {
  const sequences = context?.triggerMetadata?.sequenceNumberArray;
  const first: unknown = Array.isArray(sequences) ? (sequences as unknown[])[0] : undefined;
  if (typeof first === 'number' || typeof first === 'string') return `partition ${partitionOf(context)} sequence ${first}`;
  return `body ${createHash('sha256').update(bodyBytes(events[0])).digest('hex')}`;
}
