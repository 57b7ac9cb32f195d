import type { InvocationContext } from '@azure/functions';
import type { Settings } from '../config/settings';
import { assertMarkersOutliveReplay } from '../lifecycle/rewardMarkers';
import { BatchAttempts } from '../messaging/batchAttempts';
import { FailureStrikes } from '../messaging/failureStrikes';
import { RewardsConsumer, type RewardsBatchReport } from '../rewards/RewardsConsumer';
import { RewardsLedger } from '../rewards/RewardsLedger';
import { Telemetry } from '../telemetry/Telemetry';
import { parkingFromSettings, tableClientsOf, type WiringOverrides } from './stores';

/**
 * The rewards consumer as the settings describe it: balances and event markers in table
 * `REWARDS_TABLE_NAME` (same account as the idempotency table), parked events in `PARKED_TABLE_NAME`,
 * every call bounded by `IDEMPOTENCY_STORE_TIMEOUT_MS`. Sends nothing until the first batch.
 */
export function rewardsFromSettings(settings: Settings, overrides: WiringOverrides = {}): RewardsConsumer {
  const markerRetentionMs = assertMarkersOutliveReplay(settings); // a marker swept before a replay finds it would apply its event twice
  const parking = parkingFromSettings(settings, overrides);
  const table = tableClientsOf(settings, overrides)(settings.REWARDS_TABLE_NAME);
  return new RewardsConsumer({
    ledger: new RewardsLedger(table, overrides.clock, settings.IDEMPOTENCY_STORE_TIMEOUT_MS, { markerRetentionMs }),
    parking,
    // A batch's failures are counted beside the parked events (partition `strikes-rewards`).
    strikes: new FailureStrikes(parking.client, overrides.clock, settings.IDEMPOTENCY_STORE_TIMEOUT_MS),
    // Where each batch's invocation started and answered: one that ended without an answer (timeout, crash) is a strike.
    attempts: new BatchAttempts(parking.client, overrides.clock, settings.IDEMPOTENCY_STORE_TIMEOUT_MS),
    telemetry: overrides.telemetry ?? new Telemetry(),
  });
}

/** The batch handler of the Event Hubs trigger. */
export type RewardsHandler = (events: unknown, context: InvocationContext) => Promise<RewardsBatchReport>;

/**
 * The Event Hubs trigger's handler (`cardinality: 'many'`): the batch as `@azure/functions` delivers it (an
 * array of parsed JSON, strings or Buffers; a single event is taken as a batch of one) to the consumer, and
 * one log line of what it did (counts and the partition, never a payload). Returning lets the host
 * checkpoint the batch; throwing (a store failure, a failed park) makes the trigger's retry policy run the
 * whole batch again, so no event is checkpointed past before it is applied or parked.
 */
export function rewardsHandler(consumer: RewardsConsumer): RewardsHandler {
  return async (events, context) => {
    const batch = Array.isArray(events) ? (events as unknown[]) : [events];
    const report = await consumer.handleBatch(batch, context);
    const partition = (context.triggerMetadata?.partitionContext as { partitionId?: unknown } | undefined)?.partitionId;
    context.info(`rewards: ${batch.length} events`, {
      consumer: consumer.consumer,
      partitionId: typeof partition === 'string' ? partition : undefined,
      applied: report.applied,
      duplicates: report.duplicates,
      replays: report.replays,
      parked: report.parked,
      ignored: report.ignored,
    });
    return report;
  };
}
