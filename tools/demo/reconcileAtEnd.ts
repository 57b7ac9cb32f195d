import { app, type InvocationContext } from '@azure/functions';
import type { TableClient } from '@azure/data-tables';
import * as df from 'durable-functions';
import type { Clock } from 'azure-functions-idempotency';
import type { ReconcileReport } from '../../src/app/paymentReconciler';
import { paymentsLifecycleFromSettings } from '../../src/app/paymentsLifecycle';
import type { Settings } from '../../src/config/settings';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { WorkerHost } from '../local/host/WorkerHost';

const FUNCTION = 'demoPaymentsReconciler';

/**
 * One pass of the app's payments reconciler (`paymentsLifecycleFromSettings(...).reconcile`, what the expiry timer runs
 * every 15 minutes in Azure) on the demo's real Durable engine, through a timer function invoked as the host invokes
 * it (its Durable client binding). The demo runs it once its runs are drained: a record still in progress whose run
 * ended (a takeover that met a run still going, across the time phase's jump) is restarted as the app would restart
 * it, not left for the verdict to call lost. Nothing else of the timer runs (no sweep, no purge: the verdict reads the
 * runs and entities after it).
 */
export async function reconcileOnce(options: {
  readonly settings: Settings;
  readonly tables: (name: string) => TableClient;
  readonly clock: Clock;
  readonly clientBindingData: string;
  readonly telemetry?: Telemetry;
}): Promise<ReconcileReport | { readonly skipped: string }> {
  const lifecycle = paymentsLifecycleFromSettings(options.settings, { tableClient: options.tables, clock: options.clock });
  let report: ReconcileReport | { readonly skipped: string } | undefined;
  const handler = async (_timer: unknown, context: InvocationContext) => {
    report = await lifecycle.reconcile(df.getClient(context), 120_000, options.telemetry ?? new Telemetry());
  };
  const host = WorkerHost.load(() => app.timer(FUNCTION, { schedule: '0 */15 * * * *', extraInputs: [df.input.durableClient()], handler }));
  await host.invoke(FUNCTION, {
    inputData: [
      { name: host.bindingName(FUNCTION, 'timerTrigger'), data: { json: JSON.stringify({ isPastDue: false }) } },
      { name: host.bindingName(FUNCTION, 'durableClient'), data: { string: options.clientBindingData } },
    ],
  });
  if (!report) throw new Error('the reconciler pass did not run');
  return report;
}
