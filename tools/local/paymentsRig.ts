import { InvocationContext } from '@azure/functions';
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../src/core/clock';
import { TableIdempotencyStore } from '../../src/core/TableIdempotencyStore';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { makePaymentsHandler } from '../../src/functions/handlers/paymentsHandler';
import { PaymentProviderClient } from '../../src/payments/PaymentProviderClient';
import { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { LocalChargeWorkflow, type RunStep } from './LocalChargeWorkflow';

export interface PaymentsRigOptions {
  /** Table Storage connection string (Azurite). */
  readonly tableConnectionString: string;
  /**
   * Storage of the local Durable executor (entity states, instances); default `tableConnectionString`.
   * The demo points it past its outage proxy: Durable's backend storage (AzureWebJobsStorage) has
   * its own resilience in Azure, which the local executor does not model.
   */
  readonly durableTableConnectionString?: string;
  /** Table names get this prefix, so several rigs can share one Azurite. */
  readonly tablePrefix?: string;
  readonly providerUrl: string;
  readonly providerTimeoutMs?: number;
  readonly leaseMs?: number;
  readonly waitBudgetMs?: number;
  readonly retentionMs?: number;
  readonly cacheSize?: number;
  readonly telemetry?: Telemetry;
  readonly crashBefore?: (step: RunStep, instanceId: string) => boolean;
  readonly restartDelayMs?: number;
  readonly activityRetry?: { maxAttempts: number; firstRetryIntervalMs: number };
  readonly clock?: Clock;
}

/** Trigger metadata of one delivery, as the Service Bus trigger passes it. */
export interface DeliveryMetadata {
  readonly messageId?: unknown;
  readonly deliveryCount?: number;
  readonly correlationId?: string;
}

/**
 * The payments consumer wired for local runs (tests and the demo): the real handler of
 * `src/functions` over Azurite tables, the payment provider at `providerUrl`, and the in-process
 * Durable executor. `deliver` calls the handler as the Service Bus trigger would.
 */
export async function startPaymentsRig(options: PaymentsRigOptions) {
  const prefix = options.tablePrefix ?? `r${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const table = (name: string, connectionString = options.tableConnectionString) =>
    TableClient.fromConnectionString(connectionString, `${prefix}${name}`, {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 2, retryDelayInMs: 50, maxRetryDelayInMs: 500 },
    });
  const store = new TableIdempotencyStore(table('idempotency'), {
    leaseMs: options.leaseMs ?? 2_000,
    retentionMs: options.retentionMs ?? 30 * 86_400_000,
    cacheSize: options.cacheSize ?? 0,
    clock: options.clock,
  });
  const parking = new ParkingStore(table('parked'), options.clock);
  const durableTable = table('durable', options.durableTableConnectionString);
  await Promise.all([store.ensureTable(), parking.ensureTable(), durableTable.createTable()]);
  const telemetry = options.telemetry ?? new Telemetry();
  const provider = new PaymentProviderClient({
    baseUrl: options.providerUrl,
    timeoutMs: options.providerTimeoutMs ?? 2_000,
    onLatency: (ms, statusCode) => telemetry.providerLatency(ms, { statusCode: statusCode ?? 0 }),
  });
  const workflow = new LocalChargeWorkflow({
    table: durableTable,
    chargeProvider: (input) => provider.charge(input.payment, input.idempotencyKey, input.correlationId),
    retry: options.activityRetry ?? { maxAttempts: 3, firstRetryIntervalMs: 50 },
    crashBefore: options.crashBefore,
    restartDelayMs: options.restartDelayMs,
    clock: options.clock,
  });
  const consumer = new PaymentsConsumer({
    store,
    parking,
    workflow,
    telemetry,
    clock: options.clock,
    waitBudgetMs: options.waitBudgetMs ?? Math.floor((options.leaseMs ?? 2_000) * 0.8),
  });
  const handler = makePaymentsHandler({ consumer: () => consumer, telemetry: () => telemetry, workflow: () => workflow });

  /** One delivery through the real handler; resolves to its result, rejects when it would be abandoned. */
  function deliver(body: unknown, metadata: DeliveryMetadata) {
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: 'paymentsConsumer',
      triggerMetadata: { deliveryCount: 1, ...metadata },
      logHandler: () => undefined,
    });
    return handler(body, context);
  }

  return { store, parking, workflow, provider, consumer, handler, deliver, telemetry };
}
export type PaymentsRig = Awaited<ReturnType<typeof startPaymentsRig>>;
