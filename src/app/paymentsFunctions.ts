import { app, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { Settings } from '../config/settings';
import type { PaymentDeliveryResult } from '../payments/PaymentsConsumer';
import { Telemetry } from '../telemetry/Telemetry';
import { DurableChargeWorkflow } from './DurableChargeWorkflow';
import {
  CHARGE_ACTIVITY,
  CHARGE_ENTITY,
  CHARGE_ORCHESTRATION,
  COMPLETE_RECORD_ACTIVITY,
  chargePaymentOrchestrator,
  chargeProviderActivity,
  completeRecordActivity,
  paymentChargeEntity,
} from './durableCharge';
import { paymentsFromSettings, providerFromSettings, type PaymentsOverrides, type PaymentsParts } from './payments';
import { makePaymentsHandler } from './paymentsHandler';
import { leaseMsOf } from './stores';
import { waitBudgetMsOf } from '../payments/chargePatience';
import { rideOutPlanOf, type RideOutPlan } from '../messaging/storeOutage';
import type { TableClient } from '@azure/data-tables';
import { paymentShardsOf } from './shardStores';
import { systemClock } from 'azure-functions-idempotency';
import { shardLayoutOf } from '../payments/shards';
import { misplacedPaymentRecords } from '../payments/shardOwnership';
import { shardLayoutGate } from './shardLayoutGate';

/** The payments handlers the registrations use: the Service Bus trigger, the charge orchestration, entity and activities. */
export interface PaymentsFunctions {
  /**
   * Returning completes the message; throwing abandons it (redelivery). The host ignores a Service Bus
   * trigger's return value; the result is returned so that a local host can report it.
   */
  readonly trigger: (message: unknown, context: InvocationContext) => Promise<PaymentDeliveryResult>;
  readonly orchestrator: typeof chargePaymentOrchestrator;
  readonly entity: typeof paymentChargeEntity;
  readonly activity: df.ActivityHandler;
  /** Handoff design: the run's record write on the consumer's store (`completePaymentRecord`). */
  readonly recordActivity: df.ActivityHandler;
  /** The consumer's parts (stores, consumer), built on first use and then shared by the invocations. */
  readonly parts: () => PaymentsParts;
}

/**
 * The payments handlers built from settings plus overrides (the local rigs pass theirs; the workflow
 * override is ignored: the trigger always uses Durable's client of its invocation, as in Azure).
 * The provider client is built at once (no I/O), so a missing `PAYMENT_PROVIDER_URL` throws here.
 * @throws ConfigurationError naming the setting.
 */
export function paymentsFunctionsFrom(settings: Settings, overrides: PaymentsOverrides = {}): PaymentsFunctions {
  const telemetry = overrides.telemetry ?? new Telemetry();
  const provider = providerFromSettings(settings, telemetry);
  let parts: PaymentsParts | undefined;
  const partsOnce = () => (parts ??= paymentsFromSettings(settings, { ...overrides, telemetry, workflow: undefined }));
  const handler = makePaymentsHandler({
    consumer: () => partsOnce().consumer,
    telemetry: () => telemetry,
    workflow: (context) => new DurableChargeWorkflow(df.getClient(context)),
    rideOut: paymentsRideOutPlan(settings, overrides),
    layoutGate: paymentsLayoutGate(settings, () => partsOnce().store.client, overrides),
  });
  return {
    trigger: handler,
    orchestrator: chargePaymentOrchestrator,
    entity: paymentChargeEntity,
    activity: chargeProviderActivity(
      provider,
      () => telemetry,
      () => partsOnce().store,
    ),
    recordActivity: completeRecordActivity(
      () => partsOnce().store,
      () => telemetry,
    ),
    parts: partsOnce,
  };
}

/**
 * The refusal of a layout this shard's table was not migrated to (`shardLayoutGate`), when sharded (N > 1) on the Table
 * store: a bounded check of the table (`misplacedPaymentRecords`, one request per partition; while the table holds no
 * live payment record, as many per other shard reached through `PAYMENT_SHARD_TABLE_ENDPOINTS`) before the first claim
 * of a process. N = 1 owns every key; with `IDEMPOTENCY_STORE=cosmos` the check is not made (docs/DESIGN.md says why).
 * @throws ConfigurationError when the map is set and a local connection string cannot reach the other shards
 */
export function paymentsLayoutGate(settings: Settings, client: () => TableClient, overrides: PaymentsOverrides = {}) {
  const layout = shardLayoutOf(settings);
  if (layout.count === 1 || settings.IDEMPOTENCY_STORE !== 'table') return undefined;
  const shards = settings.PAYMENT_SHARD_TABLE_ENDPOINTS?.trim() ? paymentShardsOf(settings, overrides) : undefined;
  const others = shards
    ? Array.from({ length: layout.count }, (_, shard) => shard)
        .filter((shard) => shard !== layout.index)
        .map((shard) => ({ shard, client: shards.tables(shard)(settings.IDEMPOTENCY_TABLE_NAME) }))
    : [];
  return shardLayoutGate({
    layout,
    clock: overrides.clock ?? systemClock,
    check: (nowMs) =>
      misplacedPaymentRecords(client(), others, {
        layout,
        partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
        nowMs,
        callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
      }),
  });
}

/**
 * The payments trigger's store-outage ride-out: one attempt waits at most 80 % of a lease for another delivery and
 * makes a few store calls (each within `IDEMPOTENCY_STORE_TIMEOUT_MS`); new attempts start while the host's lock
 * renewal (host.json `maxAutoLockRenewalDuration`) can still cover them. Defaults: 300 - (48 + 3 x 5) = 237 s.
 */
export function paymentsRideOutPlan(settings: Settings, overrides: PaymentsOverrides = {}): RideOutPlan {
  const waitMs = waitBudgetMsOf({ IDEMPOTENCY_LEASE_SECONDS: leaseMsOf(settings, overrides) / 1000 });
  return rideOutPlanOf({ attemptMs: waitMs + 3 * settings.IDEMPOTENCY_STORE_TIMEOUT_MS });
}

/**
 * Registers the payments functions with the Functions runtime: `paymentsConsumer` (Service Bus queue
 * `%PAYMENTS_QUEUE_NAME%`, connection `ServiceBusConnection`, Durable client input), the `chargePayment`
 * orchestration, the `paymentCharge` entity and the `chargeProvider` activity. `src/functions/payments.ts`
 * calls it when the worker loads the app; the local host (`tools/local`) calls it with its own handlers
 * to see the same registrations.
 */
export function registerPaymentsFunctions(functions: Omit<PaymentsFunctions, 'parts'>): void {
  app.serviceBusQueue('paymentsConsumer', {
    connection: 'ServiceBusConnection',
    queueName: '%PAYMENTS_QUEUE_NAME%',
    extraInputs: [df.input.durableClient()],
    handler: functions.trigger,
  });
  df.app.orchestration(CHARGE_ORCHESTRATION, functions.orchestrator);
  df.app.entity(CHARGE_ENTITY, functions.entity);
  df.app.activity(CHARGE_ACTIVITY, { handler: functions.activity });
  df.app.activity(COMPLETE_RECORD_ACTIVITY, { handler: functions.recordActivity });
}
