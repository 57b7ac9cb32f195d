import { InvocationContext } from '@azure/functions';
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { paymentsFromSettings, providerFromSettings } from '../../src/app/payments';
import { makePaymentsHandler } from '../../src/app/paymentsHandler';
import { loadSettings } from '../../src/config/settings';
import type { Clock } from 'azure-functions-idempotency/internal';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { LocalChargeWorkflow, type RunStep } from './LocalChargeWorkflow';
import { startRealEnginePayments, type RealEnginePaymentsOptions } from './durable/realEnginePayments';
import type { ServiceBusMetadata } from './host/serviceBusRequest';
import type { PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import type { RetryBudget } from '../../src/payments/chargeOrchestration';
import type { CompleteRecordInput } from '../../src/payments/completeRecord';
import {
  CHARGE_ACTIVITY,
  chargeProviderActivity,
  completeRecordActivity,
  COMPLETE_RECORD_ACTIVITY,
  type ChargeAndRecordInput,
} from '../../src/app/durableCharge';
import type { ProviderLookup } from '../../src/payments/providerLookup';
import type { TableIdempotencyStore } from 'azure-functions-idempotency/internal';

export interface PaymentsRigOptions {
  /** Table Storage connection string (Azurite). */
  readonly tableConnectionString: string;
  /** Storage of the local Durable executor; default `tableConnectionString` (the demo's is past its outage proxy). */
  readonly durableTableConnectionString?: string;
  /** Table names get this prefix, so several rigs can share one Azurite. */
  readonly tablePrefix?: string;
  readonly providerUrl: string;
  readonly providerTimeoutMs?: number;
  /** Default 2 s; a delivery waits 80 % of it (the app's rule, `waitBudgetMsOf`). */
  readonly leaseMs?: number;
  readonly retentionMs?: number;
  readonly cacheSize?: number;
  readonly telemetry?: Telemetry;
  readonly crashBefore?: (step: RunStep, instanceId: string) => boolean;
  readonly restartDelayMs?: number;
  readonly activityRetry?: { maxAttempts: number; firstRetryIntervalMs: number };
  readonly clock?: Clock;
  /**
   * `real`: the functions as registered, the charge run by the real Durable engine (`durable/realEnginePayments.ts`).
   * `executor` (default): the handler called directly, the charge by `LocalChargeWorkflow` (fast, crash points at
   * each step; tied to the real engine by test/durable/realEngine.differential.test.ts).
   */
  readonly durable?: 'real' | 'executor';
  /** Real engine: after the provider charged `paymentId`, true kills the Durable host (then it is restarted). */
  readonly killHostAfterCharge?: (paymentId: string) => boolean;
  /** Real engine: before the engine's request to its task hub's storage lands (`RealEnginePaymentsOptions.onEngineStorage`). */
  readonly onEngineStorage?: RealEnginePaymentsOptions['onEngineStorage'];
  /** `PAYMENTS_DESIGN` (default the settings': `handoff`): hand the charge off to its orchestration, or hold the message. */
  readonly design?: PaymentsDesign;
  /** Handoff: the run's retry budget (default the settings': 60 min, 5 s doubling to 5 min). */
  readonly retry?: RetryBudget;
  /** `PAYMENT_PROVIDER_LOOKUP` (default the settings': `none`). */
  readonly providerLookup?: ProviderLookup;
  /** `PAYMENT_PROVIDER_KEY_MEMORY_HOURS` (default the settings': 24). */
  readonly providerKeyMemoryHours?: number;
}

/** The context an activity is invoked with (the app's activities do not read it). */
function activityContext(functionName: string): InvocationContext {
  return new InvocationContext({ invocationId: randomUUID(), functionName, logHandler: () => undefined });
}

/**
 * The payments consumer wired for local runs (tests and the demo): the app's own wiring (`src/app`,
 * the settings' defaults) with overrides: Azurite tables, the payment provider at `providerUrl`, the
 * in-process Durable executor, a short lease. `deliver` calls the handler as the Service Bus trigger would.
 */
export async function startPaymentsRig(options: PaymentsRigOptions) {
  const prefix = options.tablePrefix ?? `r${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const table = (name: string, connectionString = options.tableConnectionString) =>
    TableClient.fromConnectionString(connectionString, `${prefix}${name}`, {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 2, retryDelayInMs: 50, maxRetryDelayInMs: 500 },
    });
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: options.tableConnectionString,
    IDEMPOTENCY_CACHE_SIZE: String(options.cacheSize ?? 0),
    PAYMENT_PROVIDER_URL: options.providerUrl,
    PAYMENT_PROVIDER_TIMEOUT_MS: String(options.providerTimeoutMs ?? 2_000),
    PAYMENT_PROVIDER_LOOKUP: options.providerLookup,
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: options.providerKeyMemoryHours === undefined ? undefined : String(options.providerKeyMemoryHours),
  });
  const telemetry = options.telemetry ?? new Telemetry();
  const provider = providerFromSettings(settings, telemetry);
  const durableTable = table('durable', options.durableTableConnectionString);
  const common = {
    tableClient: (name: string) => table(name),
    clock: options.clock,
    leaseMs: options.leaseMs ?? 2_000,
    retentionMs: options.retentionMs,
    design: options.design,
    retry: options.retry,
  };
  if (options.durable === 'real') {
    const real = await startRealEnginePayments({
      settings,
      overrides: { ...common, telemetry },
      killAfterCharge: options.killHostAfterCharge,
      onEngineStorage: options.onEngineStorage,
    });
    const { store, parking, consumer } = real.parts;
    await Promise.all([store.ensureTable(), parking.ensureTable()]);
    return {
      store,
      parking,
      workflow: real.workflow,
      provider,
      consumer,
      deliver: real.deliver,
      telemetry,
      backend: real.backend,
      close: real.close,
      settings,
      tables: common.tableClient,
    };
  }
  const workflow = new LocalChargeWorkflow({
    table: durableTable,
    chargeProvider: (input: ChargeAndRecordInput) => chargeActivity(input, activityContext(CHARGE_ACTIVITY)) as Promise<unknown>,
    retry: options.activityRetry ?? { maxAttempts: 3, firstRetryIntervalMs: 50 },
    crashBefore: options.crashBefore,
    restartDelayMs: options.restartDelayMs,
    clock: options.clock,
    completeRecord: (input: CompleteRecordInput) => recordActivity(input, activityContext(COMPLETE_RECORD_ACTIVITY)) as Promise<unknown>,
  });
  // The app's activity bodies (as `paymentsFunctionsFrom` builds them) on the consumer's store, built just below with
  // the executor as its workflow.
  const built: { store?: TableIdempotencyStore } = {};
  const chargeActivity = chargeProviderActivity(
    provider,
    () => telemetry,
    () => built.store!,
  );
  const recordActivity = completeRecordActivity(
    () => built.store!,
    () => telemetry,
  );
  const { store, parking, consumer } = paymentsFromSettings(settings, { ...common, telemetry, workflow });
  built.store = store;
  await Promise.all([store.ensureTable(), parking.ensureTable(), durableTable.createTable()]);
  const handler = makePaymentsHandler({ consumer: () => consumer, telemetry: () => telemetry, workflow: () => workflow });

  /** One delivery through the real handler; resolves to its result, rejects when it would be abandoned. */
  function deliver(body: unknown, metadata: ServiceBusMetadata) {
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: 'paymentsConsumer',
      triggerMetadata: { deliveryCount: 1, ...metadata },
      logHandler: () => undefined,
    });
    return handler(body, context);
  }

  return { store, parking, workflow, provider, consumer, deliver, telemetry, backend: undefined, close: undefined, settings, tables: common.tableClient };
}
export type PaymentsRig = Awaited<ReturnType<typeof startPaymentsRig>>;
