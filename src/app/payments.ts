import type { Settings } from '../config/settings';
import { ConfigurationError } from '../core/errors';
import { TableIdempotencyStore } from '../core/TableIdempotencyStore';
import { ParkingStore } from '../messaging/ParkingStore';
import type { ChargeWorkflow } from '../payments/ChargeWorkflow';
import { PaymentProviderClient } from '../payments/PaymentProviderClient';
import { PaymentsConsumer } from '../payments/PaymentsConsumer';
import { createTableClient } from '../storage/tableClient';
import { Telemetry } from '../telemetry/Telemetry';
import { retentionMsOf } from '../lifecycle/retention';
import { waitBudgetMsOf } from '../payments/chargePatience';

/** The dedup store as the settings describe it. */
export function storeFromSettings(settings: Settings): TableIdempotencyStore {
  return new TableIdempotencyStore(createTableClient(settings), {
    partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
    leaseMs: settings.IDEMPOTENCY_LEASE_SECONDS * 1000,
    retentionMs: retentionMsOf(settings),
    cacheSize: settings.IDEMPOTENCY_CACHE_SIZE,
    callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
  });
}

/** The payments consumer wired from settings; in Azure the workflow (Durable) is set per invocation. */
export function paymentsConsumerFromSettings(settings: Settings, telemetry = new Telemetry(), workflow?: ChargeWorkflow): PaymentsConsumer {
  return new PaymentsConsumer({
    store: storeFromSettings(settings),
    parking: new ParkingStore(createTableClient(settings, {}, settings.PARKED_TABLE_NAME), undefined, { callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS }),
    workflow,
    telemetry,
    // A delivery waits at most 80% of a lease: the lease then still covers the completion write.
    waitBudgetMs: waitBudgetMsOf(settings),
  });
}

/** The provider client of the `chargeProvider` activity. */
export function providerFromSettings(settings: Settings, telemetry = new Telemetry()): PaymentProviderClient {
  if (!settings.PAYMENT_PROVIDER_URL) throw new ConfigurationError('PAYMENT_PROVIDER_URL is not set: the payments consumer needs the provider base URL');
  return new PaymentProviderClient({
    baseUrl: settings.PAYMENT_PROVIDER_URL,
    timeoutMs: settings.PAYMENT_PROVIDER_TIMEOUT_MS,
    onLatency: (ms, statusCode) => telemetry.providerLatency(ms, { statusCode: statusCode ?? 0 }),
  });
}
