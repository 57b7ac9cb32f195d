import { shardLayoutOf } from '../payments/shards';
import { callLeaseMsOf, callTimingOf, postWindowMs } from '../config/callTiming';
import type { Settings } from '../config/settings';
import { ConfigurationError } from 'azure-functions-idempotency';
import type { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import type { ParkingStore } from '../messaging/ParkingStore';
import type { ChargeWorkflow } from '../payments/ChargeWorkflow';
import { waitBudgetMsOf } from '../payments/chargePatience';
import { PaymentProviderClient } from '../payments/PaymentProviderClient';
import { PaymentsConsumer, type PaymentsDesign } from '../payments/PaymentsConsumer';
import type { RetryBudget } from '../payments/chargeOrchestration';
import { MetricNames, Telemetry } from '../telemetry/Telemetry';
import { providerCapabilityOf } from '../payments/providerLookup';
import { consumerStoreFromSettings, leaseMsOf, parkingFromSettings, storeFromSettings, type WiringOverrides } from './stores';

/** The payments overrides: those of every wiring, plus the charge workflow. */
export interface PaymentsOverrides extends WiringOverrides {
  /** In Azure the workflow (Durable's client) is set per invocation; the local rigs pass theirs. */
  readonly workflow?: ChargeWorkflow;
  /** `PAYMENTS_DESIGN` instead of the settings' (the local executor runs the holding design only). */
  readonly design?: PaymentsDesign;
  /** The handoff run's retry budget instead of `PAYMENT_RETRY_*` (the local rigs' short budgets). */
  readonly retry?: RetryBudget;
}

/**
 * The handoff run's retry budget from `PAYMENT_RETRY_BUDGET_MINUTES`, `_FIRST_DELAY_SECONDS`, `_MAX_DELAY_SECONDS`, and
 * a call's lease and POST window from what a call can take (src/config/callTiming.ts).
 */
export function retryBudgetOf(settings: Settings): RetryBudget {
  const timing = callTimingOf(settings);
  return {
    budgetMs: Math.round(settings.PAYMENT_RETRY_BUDGET_MINUTES * 60_000),
    firstDelayMs: Math.round(settings.PAYMENT_RETRY_FIRST_DELAY_SECONDS * 1000),
    maxDelayMs: Math.round(settings.PAYMENT_RETRY_MAX_DELAY_SECONDS * 1000),
    callLeaseMs: callLeaseMsOf(timing),
    postWindowMs: postWindowMs(timing),
  };
}

/** The payments consumer and the stores it writes to (the rigs ensure the tables and inspect them). */
export interface PaymentsParts {
  readonly store: TableIdempotencyStore;
  readonly parking: ParkingStore;
  readonly consumer: PaymentsConsumer;
}

/** The payments consumer wired from settings, with its stores. Sends nothing. */
export function paymentsFromSettings(settings: Settings, overrides: PaymentsOverrides = {}): PaymentsParts {
  const store = storeFromSettings(settings, overrides);
  const parking = parkingFromSettings(settings, overrides);
  const consumer = new PaymentsConsumer({
    // IDEMPOTENCY_STORE: the table store above, or the Cosmos store (docs/stores.md).
    store: consumerStoreFromSettings(settings, overrides, store),
    parking,
    workflow: overrides.workflow,
    telemetry: overrides.telemetry ?? new Telemetry(),
    clock: overrides.clock,
    // A delivery waits at most 80% of a lease: the lease then still covers the completion write.
    waitBudgetMs: waitBudgetMsOf({ IDEMPOTENCY_LEASE_SECONDS: leaseMsOf(settings, overrides) / 1000 }),
    design: overrides.design ?? settings.PAYMENTS_DESIGN,
    retry: overrides.retry ?? retryBudgetOf(settings),
    provider: providerCapabilityOf(settings),
    shard: shardLayoutOf(settings),
  });
  return { store, parking, consumer };
}

/**
 * The provider client of the `chargeProvider` activity.
 * @throws ConfigurationError when `PAYMENT_PROVIDER_URL` is not set.
 */
export function providerFromSettings(settings: Settings, telemetry = new Telemetry()): PaymentProviderClient {
  if (!settings.PAYMENT_PROVIDER_URL) throw new ConfigurationError('PAYMENT_PROVIDER_URL is not set: the payments consumer needs the provider base URL');
  return new PaymentProviderClient({
    baseUrl: settings.PAYMENT_PROVIDER_URL,
    timeoutMs: settings.PAYMENT_PROVIDER_TIMEOUT_MS,
    onLatency: (ms, statusCode) => telemetry.providerLatency(ms, { statusCode: statusCode ?? 0 }),
    // An answer from a layer before the provider's idempotency (401 a rotated secret, 403, 404, 429): retried, counted.
    onRefused: (statusCode) => telemetry.count(MetricNames.providerRefused, { consumer: 'payments', statusCode }),
  });
}
