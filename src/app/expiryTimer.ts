import type { InvocationContext, Timer } from '@azure/functions';
import { metrics, type Meter } from '@opentelemetry/api';
import type { Settings } from '../config/settings';
import { ExpirySweeper, type HeldKeysSource } from 'azure-functions-idempotency/table';
import { assertRetentionCoversRedelivery, retentionMsOf } from '../lifecycle/retention';
import { holdCosmosRecords } from '../lifecycle/cosmosHeldRecords';
import { assertScheduleRenewsHolds } from '../lifecycle/timerSchedule';
import { recordSweepMetrics } from '../lifecycle/sweepMetrics';
import { tickShares } from '../lifecycle/tickBudget';
import { systemClock } from 'azure-functions-idempotency';
import { cosmosIdempotencyContainer } from './cosmosClient';
import { paymentsDeadLetterSource } from './deadLetterSource';
import { durableClientOf, purgeDurableRecords } from './durablePurge';
import { rewardMarkerSweepFromSettings } from './rewardMarkerSweep';
import { paymentsLifecycleFromSettings } from './paymentsLifecycle';
import { Telemetry } from '../telemetry/Telemetry';
import { invocationLogSink } from '../telemetry/invocationLogSink';
import { tableClientsOf, type WiringOverrides } from './stores';

/** What the expiry timer may take from elsewhere than the settings; tests pass their own. */
export interface ExpiryTimerOverrides extends Pick<WiringOverrides, 'tableClient' | 'clock' | 'idempotencyContainer'> {
  /** Default: the global meter `idempotent-consumer`, read on every tick (telemetry may start later). */
  readonly meter?: Meter;
  /** What the sweep holds (default: the payments dead-letter queue when Service Bus is configured). */
  readonly holds?: readonly HeldKeysSource[];
  /** The reconciler's metrics and log lines (default: the global OpenTelemetry providers, plus the invocation's log). */
  readonly telemetry?: Telemetry;
}

/**
 * The expiry timer's handler, built once from validated settings: each tick runs one budgeted sweep
 * of the idempotency table (keeping the records of dead-lettered payments, `deadLetterSource.ts`), logs and counts what it did; then, when the function has a Durable client input,
 * in what is left of the budget: the payments reconciler (`paymentReconciler.ts`: in-progress records whose run
 * ended, restarted and alerted), then the purge of charge orchestrations and entities older than the retention
 * whose record is gone (`purgeDurableRecords`); last, the rewards markers past their retention
 * (`rewardMarkerSweep.ts`).
 * With `IDEMPOTENCY_STORE=cosmos` the payments consumer's records are in Cosmos, which expires them by TTL: each tick
 * first holds the dead-lettered ones there (`holdCosmosRecords`), then sweeps the table (the HTTP API's records stay
 * there) without holds; the metrics' held counts are the Cosmos hold's.
 * @throws ConfigurationError at once when the retention does not cover the redelivery window, or the schedule
 *   (`EXPIRY_TIMER_SCHEDULE`) leaves runs further apart than the DLQ resubmit margin (`assertScheduleRenewsHolds`).
 *   A margin of 0 (resubmissions not covered) accepts any schedule and warns on every run.
 * The handler throws StoreUnavailableError or StoreRequestError (the run fails; the next tick resumes).
 */
export function expiryTimerFromSettings(settings: Settings, overrides: ExpiryTimerOverrides = {}): (timer: Timer, context: InvocationContext) => Promise<void> {
  const window = assertRetentionCoversRedelivery(settings);
  const schedule = assertScheduleRenewsHolds(settings);
  const deadLetters = overrides.holds ? undefined : paymentsDeadLetterSource(settings);
  const holds = overrides.holds ?? (deadLetters ? [deadLetters] : []);
  const table = tableClientsOf(settings, overrides)(settings.IDEMPOTENCY_TABLE_NAME);
  const cosmos = settings.IDEMPOTENCY_STORE === 'cosmos' ? (overrides.idempotencyContainer ?? cosmosIdempotencyContainer(settings)) : undefined;
  const rewardMarkers = rewardMarkerSweepFromSettings(settings, overrides);
  const lifecycle = paymentsLifecycleFromSettings(settings, overrides);
  return async (timer, context) => {
    if (timer.isPastDue) context.warn('expiry timer is past due');
    const shares = tickShares(settings.EXPIRY_SWEEP_BUDGET_SECONDS * 1000);
    const sweeper = new ExpirySweeper(table, {
      partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
      budgetMs: shares.sweepMs,
      clock: overrides.clock,
      log: (message) => context.log(message),
      holds: cosmos ? [] : holds,
      holdMs: window.totalMs,
    });
    if (holds.length === 0) context.warn('expiry sweep: no dead-letter queue to hold records for (Service Bus is not configured)');
    if (schedule.warning) context.warn(`expiry sweep: ${schedule.warning}`);
    const clock = overrides.clock ?? systemClock;
    const startedMs = clock.nowMs();
    try {
      // Cosmos first: a dead-letter queue that cannot be read fails the run, as on the table.
      const held =
        cosmos && holds.length > 0
          ? await holdCosmosRecords(cosmos, holds, { holdMs: window.totalMs, clock, callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS })
          : undefined;
      if (held) context.log(`cosmos hold: held ${held.held} (${held.heldWithRecord} with a record, ${held.extended} extended), ${held.requests} requests`);
      const swept = await sweeper.sweep();
      const report = held ? { ...swept, held: held.held, heldWithRecord: held.heldWithRecord, heldExtended: held.extended } : swept;
      recordSweepMetrics(overrides.meter ?? metrics.getMeter('idempotent-consumer'), report);
      const client = durableClientOf(context);
      if (client) {
        const budgetLeftMs = () => Math.max(0, settings.EXPIRY_SWEEP_BUDGET_SECONDS * 1000 - (clock.nowMs() - startedMs));
        // The reconciler first: a run that ended without its record is restarted (and alerted) before any purge.
        const telemetry = (overrides.telemetry ?? new Telemetry()).withSink(invocationLogSink(context));
        const reconciled = await lifecycle.reconcile(client, shares.reconcileMs(budgetLeftMs()), telemetry);
        context.log(
          'skipped' in reconciled
            ? `payments reconciler: skipped (${reconciled.skipped})`
            : `payments reconciler: ${reconciled.resolved.length} restarted, ${reconciled.running} running (${reconciled.stuck} stuck: alerted), ${reconciled.refused} refused of ${reconciled.scanned} in progress past the grace${reconciled.stoppedByBudget ? ' (budget spent)' : ''}`,
        );
        const cutoffMs = clock.nowMs() - retentionMsOf(settings);
        const purged = await purgeDurableRecords(client, { cutoffMs, budgetMs: budgetLeftMs(), clock, recordLive: lifecycle.recordLive });
        context.log(
          `durable purge: ${purged.orchestrations} orchestration(s) and ${purged.entities} entit(ies) of ${purged.found} found, ${purged.keptLive} kept (record still there), ${purged.pages} page(s)${purged.stoppedByBudget ? ' (budget spent)' : ''}`,
        );
      }
      // The rewards markers past retention (src/lifecycle/rewardMarkers.ts), in what is left of the budget.
      await rewardMarkers(context, Math.max(0, settings.EXPIRY_SWEEP_BUDGET_SECONDS * 1000 - (clock.nowMs() - startedMs)));
    } catch (error) {
      context.error(`expiry sweep failed: ${error instanceof Error ? `${error.name}: ${error.message}` : typeof error}`);
      throw error;
    }
  };
}
