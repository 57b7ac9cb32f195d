import type { InvocationContext } from '@azure/functions';
import type { Settings } from '../../src/config/settings';
import { CHARGE_ACTIVITY, COMPLETE_RECORD_ACTIVITY, chargeProviderActivity, completeRecordActivity, FenceUnreadableError } from '../../src/app/durableCharge';
import { PaymentProviderClient, TransientProviderError } from '../../src/payments/PaymentProviderClient';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import type { Mutation } from './faults';
import type { HubFunctions } from './hubTypes';
import { SIM_PROVIDER_URL, type SimProvider } from './provider';
import type { SimStore } from './store';
import type { SimTelemetry } from './telemetry';
import type { World } from './world';

/** What the activities run against in the simulation. */
export interface ActivityDeps {
  readonly world: World;
  readonly store: SimStore;
  readonly provider: SimProvider;
  readonly telemetry: SimTelemetry;
  readonly settings: Settings;
  /** Calls the fence refused (record unreadable, past the fresh window), with the work item's age. */
  readonly fenceRefusals: Array<{ readonly key: string; readonly atMs: number; readonly ageMs: number }>;
}

/**
 * The app's activities by the names they are registered under (a mutation may break that): `chargeProvider` with the
 * app's own `PaymentProviderClient` over the simulated provider's HTTP answers (statuses, bodies, a lost connection:
 * its classification is what the run acts on), and `completePaymentRecord`.
 */
export function simActivities(deps: ActivityDeps, mutation?: Mutation): HubFunctions['activities'] {
  const { world, settings } = deps;
  const telemetryOf = () => deps.telemetry.telemetry;
  const storeOf = () => deps.store;
  const nowOf = () => world.nowMs();
  const context = {} as InvocationContext;
  let keySeq = 0;
  const charge = async (input: unknown, work: { readonly ageMs: number }) => {
    const client = new PaymentProviderClient({
      baseUrl: SIM_PROVIDER_URL,
      timeoutMs: settings.PAYMENT_PROVIDER_TIMEOUT_MS,
      fetch: deps.provider.session().fetch,
    });
    const provider = {
      findCharge: (key: string, correlationId?: string, chargesFromMs?: number) => client.findCharge(key, correlationId, chargesFromMs),
      charge: async (payment: Parameters<PaymentProviderClient['charge']>[0], key: string, correlationId?: string, chargesFromMs?: number) => {
        const sent = mutation === 'key-per-call' ? `${key}#${++keySeq}` : key;
        const result = await client.charge(payment, sent, correlationId, chargesFromMs).catch((error: unknown) => {
          // A refactor that reads a 409 (a request with the key in flight) as the provider refusing the request.
          if (mutation === 'conflict-rejected' && error instanceof TransientProviderError && error.statusCode === 409)
            return { status: 'rejected' as const, reason: 'payment provider answered 409' };
          throw error;
        });
        if (mutation === 'decline-transient' && result.status === 'declined') throw new TransientProviderError('declined (retried as transient)', 402);
        return result;
      },
    } as unknown as PaymentProviderClient;
    const activity = chargeProviderActivity(provider, telemetryOf, storeOf, nowOf, (ms) => world.sleep(ms));
    // A run that drops the repeat plan: the engine's copy of a first round (run again after its answer was lost) calls blind.
    const planned = mutation === 'copy-not-repeat' ? { ...(input as object), ifRepeat: undefined } : input;
    return (activity(planned, context) as Promise<unknown>).catch((error: unknown) => {
      const key = (input as { idempotencyKey: string }).idempotencyKey;
      if (error instanceof FenceUnreadableError) deps.fenceRefusals.push({ key, atMs: world.nowMs(), ageMs: work.ageMs });
      throw error;
    });
  };
  const record = completeRecordActivity(storeOf, telemetryOf, nowOf);
  return new Map<string, (input: unknown, work: { readonly ageMs: number }) => Promise<unknown>>([
    [mutation === 'activity-renamed' ? `${CHARGE_ACTIVITY}V2` : CHARGE_ACTIVITY, charge],
    [COMPLETE_RECORD_ACTIVITY, async (input) => (await record(input, context)) as unknown],
  ]);
}

/**
 * The trigger's view of the runs (a mutation may blind it): `takeover-live` answers every status read with "no run", as
 * a refactor that drops the trigger's check for a run still going would, so a redelivery takes the record over.
 */
export function triggerWorkflow(workflow: ChargeWorkflow, mutation?: Mutation): ChargeWorkflow {
  if (mutation !== 'takeover-live') return workflow;
  return { status: async () => ({ state: 'none' }), start: (instanceId, input) => workflow.start(instanceId, input) };
}
