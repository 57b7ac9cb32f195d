import { app, type InvocationContext, type Timer } from '@azure/functions';
import { metrics, type Meter } from '@opentelemetry/api';
import { loadSettings } from '../config/settings';
import type { Clock } from '../core/clock';
import { ExpirySweeper } from '../lifecycle/ExpirySweeper';
import { assertRetentionCoversRedelivery } from '../lifecycle/retention';
import { recordSweepMetrics } from '../lifecycle/sweepMetrics';
import { createTableClient } from '../storage/tableClient';

/** What the handler reads from outside; tests pass their own. */
export interface ExpiryTimerDependencies {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly meter?: Meter;
  readonly clock?: Clock;
}

/**
 * The expiry timer's handler: validates the settings (retention must cover the redelivery window),
 * runs one budgeted sweep of the idempotency table, logs and counts what it did.
 * @throws ConfigurationError, StoreUnavailableError, StoreRequestError (the run fails; the next tick resumes).
 */
export function createExpiryTimerHandler(deps: ExpiryTimerDependencies = {}): (timer: Timer, context: InvocationContext) => Promise<void> {
  return async (timer, context) => {
    const settings = loadSettings(deps.env ?? process.env);
    assertRetentionCoversRedelivery(settings);
    if (timer.isPastDue) context.warn('expiry timer is past due');
    const sweeper = new ExpirySweeper(createTableClient(settings), {
      partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
      budgetMs: settings.EXPIRY_SWEEP_BUDGET_SECONDS * 1000,
      clock: deps.clock,
      log: (message) => context.log(message),
    });
    try {
      const report = await sweeper.sweep();
      recordSweepMetrics(deps.meter ?? metrics.getMeter('idempotent-consumer'), report);
    } catch (error) {
      context.error(`expiry sweep failed: ${error instanceof Error ? `${error.name}: ${error.message}` : typeof error}`);
      throw error;
    }
  };
}

/** Handler of the `expiryTimer` function. */
export const expiryTimerHandler = createExpiryTimerHandler();

app.timer('expiryTimer', { schedule: '%EXPIRY_TIMER_SCHEDULE%', handler: expiryTimerHandler });
