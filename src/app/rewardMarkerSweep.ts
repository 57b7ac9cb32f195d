import type { InvocationContext } from '@azure/functions';
import type { Settings } from '../config/settings';
import { systemClock } from 'azure-functions-idempotency/internal';
import { ConfigurationError } from 'azure-functions-idempotency/internal';
import { assertMarkersOutliveReplay, sweepRewardMarkers } from '../lifecycle/rewardMarkers';
import { tableClientsOf, type WiringOverrides } from './stores';

/** One run of the rewards marker sweep within `budgetMs`, logging one line (counts only). */
export type RewardMarkerSweepRun = (context: Pick<InvocationContext, 'log' | 'warn'>, budgetMs: number) => Promise<void>;

/**
 * The expiry timer's sweep of the rewards table (`REWARDS_TABLE_NAME`): markers and identity rows older than
 * `REWARDS_MARKER_RETENTION_DAYS` go. When that retention does not outlive the hub's (`assertMarkersOutliveReplay`)
 * nothing is swept and every run warns (kept longer is safe; the rewards consumer does not start then either).
 */
export function rewardMarkerSweepFromSettings(settings: Settings, overrides: Pick<WiringOverrides, 'tableClient' | 'clock'> = {}): RewardMarkerSweepRun {
  let retentionMs: number;
  try {
    retentionMs = assertMarkersOutliveReplay(settings);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    return async (context) => context.warn(`rewards marker sweep skipped: ${error.message}`);
  }
  const table = tableClientsOf(settings, overrides)(settings.REWARDS_TABLE_NAME);
  const clock = overrides.clock ?? systemClock;
  return async (context, budgetMs) => {
    const run = await sweepRewardMarkers(table, {
      cutoffMs: clock.nowMs() - retentionMs,
      budgetMs,
      clock,
      callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
    });
    context.log(
      `rewards marker sweep: deleted ${run.deleted} of ${run.scanned} past retention, ${run.requests} requests${run.stoppedByBudget ? ' (budget spent)' : ''}`,
    );
  };
}
