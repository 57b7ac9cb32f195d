import { retryBudgetOf } from '../../src/app/payments';
import { retryFailedPayment } from '../../src/app/paymentRetry';
import { DurableChargeWorkflow } from '../../src/app/DurableChargeWorkflow';
import { providerCapabilityOf } from '../../src/payments/providerLookup';
import type { Settings } from '../../src/config/settings';
import type { SimDurableClient } from './client';
import type { SimProvider } from './provider';
import type { SimStore } from './store';
import type { World } from './world';

/** What of the simulated app the operator reaches (app.ts). */
export interface OperatorsApp {
  readonly provider: SimProvider;
  readonly world: World;
  readonly client: SimDurableClient;
  readonly store: SimStore;
  readonly settings: Settings;
  readonly released: Map<string, number>;
  readonly retried: Map<string, number>;
}

/**
 * The operator's retry through the app's command (`retryFailedPayment`, as `npm run payments:retry` runs it): a held
 * payment after checking at the provider (`--checked-at-provider`: a release), a failed one as it is (the run decides
 * from the key's age). A refusal is logged, as the command prints it.
 */
export async function operatorRetry(app: OperatorsApp, paymentId: string, checkedAtProvider: boolean): Promise<void> {
  // A held payment's runbook: check the key at the provider first; a charge found there is not retried.
  if (checkedAtProvider && app.provider.ledger.some((c) => c.key === paymentId)) {
    app.world.log(`operator: found ${paymentId}'s charge at the provider: not retried`);
    return;
  }
  if (checkedAtProvider) app.released.set(paymentId, app.world.nowMs());
  app.retried.set(paymentId, app.world.nowMs());
  try {
    const workflow = new DurableChargeWorkflow(app.client.asDurableClient(), { sleep: (ms) => app.world.sleep(ms) });
    const report = await retryFailedPayment(
      {
        store: app.store,
        start: (id, input) => workflow.start(id, input),
        retry: retryBudgetOf(app.settings),
        provider: providerCapabilityOf(app.settings),
        nowMs: () => app.world.nowMs(),
        checkedAtProvider,
        status: (id) => workflow.status(id),
      },
      paymentId,
    );
    app.world.log(`operator: retried ${paymentId} as attempt ${report.attempt}`);
  } catch (error) {
    app.world.log(`operator: retry of ${paymentId} refused: ${error instanceof Error ? error.message : String(error)}`.slice(0, 200));
  }
}
