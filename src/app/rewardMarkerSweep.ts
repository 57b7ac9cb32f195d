import type { InvocationContext } from '@azure/functions';
import type { Settings } from '../config/settings';
import { systemClock, ConfigurationError } from 'azure-functions-idempotency';
import { assertMarkersOutliveReplay, sweepFailureStrikes, sweepRewardMarkers } from '../lifecycle/rewardMarkers';
import { strikesPartitionOf } from '../messaging/failureStrikes';
import { tableClientsOf, type WiringOverrides } from './stores';

/** One run of the rewards marker sweep within `budgetMs`, logging one line (counts only). */
export type RewardMarkerSweepRun = (context: Pick<InvocationContext, 'log' | 'warn'>, budgetMs: number) => Promise<void>;

/**
 * The expiry timer's sweep of the rewards table (`REWARDS_TABLE_NAME`): markers and identity rows older than
 * `REWARDS_MARKER_RETENTION_DAYS` go. When that retention does not outlive the hub's (`assertMarkersOutliveReplay`)
 * nothing is swept and every run warns (kept longer is safe; the rewards consumer does not start then either).
 * The rewards consumer's failure-strike rows (parking table, partition `strikes-rewards`: strikes and each partition's
 * last batch attempt) last struck before the same cutoff go first in the same run; the markers' sweep takes what is left
 * of the budget and resumes at its checkpoint next run.
 */
export function rewardMarkerSweepFromSettings(settings: Settings, overrides: Pick<WiringOverrides, 'tableClient' | 'clock'> = {}): RewardMarkerSweepRun {
  let retentionMs: number;
  try {
    retentionMs = assertMarkersOutliveReplay(settings);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    return async (context) => context.warn(`rewards marker sweep skipped: ${error.message}`);
  }
  const tables = tableClientsOf(settings, overrides);
  const table = tables(settings.REWARDS_TABLE_NAME);
  const parking = tables(settings.PARKED_TABLE_NAME);
  const clock = overrides.clock ?? systemClock;
  return async (context, budgetMs) => {
    const startedMs = clock.nowMs();
    const options = { cutoffMs: startedMs - retentionMs, budgetMs, clock, callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS };
    // The strike rows first: one partition, a few rows; the markers' sweep may spend the whole budget (it resumes next run).
    const strikes = await sweepFailureStrikes(parking, strikesPartitionOf('rewards'), options);
    context.log(
      `rewards failure strikes sweep: deleted ${strikes.deleted} of ${strikes.scanned} past retention${strikes.stoppedByBudget ? ' (budget spent)' : ''}`,
    );
    const left = budgetMs - (clock.nowMs() - startedMs);
    if (left <= 0) return;
    const run = await sweepRewardMarkers(table, { ...options, budgetMs: left });
    context.log(
      `rewards marker sweep: deleted ${run.deleted} of ${run.scanned} past retention, ${run.requests} requests` +
        `${run.resumed ? ', resumed at the checkpoint' : ''}${run.stoppedByBudget ? ' (budget spent; resumes at the checkpoint)' : ''}`,
    );
  };
}
