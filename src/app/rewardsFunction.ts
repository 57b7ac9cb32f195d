import { app, type RetryOptions } from '@azure/functions';
import type { RewardsHandler } from './rewards';

/** The function's name, as the host indexes it. */
export const REWARDS_FUNCTION = 'rewardsConsumer';

/**
 * The trigger: hub `%REWARDS_EVENT_HUB_NAME%`, consumer group `%REWARDS_CONSUMER_GROUP%`, connection
 * `EventHubConnection` (in Azure `EventHubConnection__fullyQualifiedNamespace` with the managed identity),
 * batches (`cardinality: 'many'`): one partition's events, in order.
 */
export const REWARDS_TRIGGER = {
  connection: 'EventHubConnection',
  eventHubName: '%REWARDS_EVENT_HUB_NAME%',
  consumerGroup: '%REWARDS_CONSUMER_GROUP%',
  cardinality: 'many',
  // Bytes, not strings: the host drops an empty text body from a batch but keeps its metadata (ToRpcStringArray), which
  // misaligns every binary-mode CloudEvent's properties; bytes keep every entry and are what parking keeps.
  dataType: 'binary',
} as const;

/**
 * Retry forever: without a retry policy the host checkpoints a batch whose function threw, and its events
 * would be skipped. A thrown batch (store down, a park that failed) runs again after 1 s, then longer, up
 * to 5 min; the partition waits (its order is kept), the others go on.
 */
export const REWARDS_RETRY: RetryOptions = {
  strategy: 'exponentialBackoff',
  maxRetryCount: -1,
  minimumInterval: { seconds: 1 },
  maximumInterval: { minutes: 5 },
};

/** Registers the rewards consumer: what `functions/rewards.ts` does, and what tests that drive it as the worker does call. */
export function registerRewardsFunction(handler: RewardsHandler): void {
  app.eventHub(REWARDS_FUNCTION, { ...REWARDS_TRIGGER, retry: REWARDS_RETRY, handler });
}
