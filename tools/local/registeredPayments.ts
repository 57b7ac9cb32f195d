import type { TableClient } from '@azure/data-tables';
import { paymentsFunctionsFrom, registerPaymentsFunctions } from '../../src/app/paymentsFunctions';
import type { PaymentsOverrides } from '../../src/app/payments';
import { CHARGE_ENTITY, CHARGE_ORCHESTRATION } from '../../src/app/durableCharge';
import type { Settings } from '../../src/config/settings';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import type { ChargeEntityState } from '../../src/payments/chargeEntity';
import { DurableHttpApi } from './durable/DurableHttpApi';
import { DurableStore } from './durable/DurableStore';
import { LocalDurableBackend, type DurableCrashPoint } from './durable/LocalDurableBackend';
import { InvocationFailedError, WorkerHost, type RpcInvocationRequest, type RpcTypedData } from './host/WorkerHost';

export interface RegisteredPaymentsOptions {
  readonly settings: Settings;
  readonly overrides: PaymentsOverrides;
  /** The local Durable backend's table (history, instances, entity states). */
  readonly durableTable: TableClient;
  readonly crashBefore?: (point: DurableCrashPoint, id: string) => boolean;
  readonly restartDelayMs?: number;
  /** Real time of a Durable timer as a share of its nominal time (activity retry delays): 1 = real time. */
  readonly timerScale?: number;
}

/** A delivery's trigger metadata, as the demo's bus knows it. */
export interface ServiceBusMetadata {
  readonly messageId?: unknown;
  readonly deliveryCount?: number;
  readonly correlationId?: string;
  readonly applicationProperties?: Readonly<Record<string, unknown>>;
}

/**
 * The payments functions exactly as `src/functions/payments.ts` registers them (`registerPaymentsFunctions`),
 * captured by the local worker host and driven the way the host drives them: the Service Bus trigger
 * invoked with the host's request (body as text, PascalCase trigger metadata, the Durable client binding's
 * data), the orchestration, entity and activity run by the local Durable backend on Azurite through the
 * SDK's own replay, and the trigger's Durable client talking HTTP to that backend.
 */
export async function startRegisteredPayments(options: RegisteredPaymentsOptions) {
  const functions = paymentsFunctionsFrom(options.settings, options.overrides);
  const host = WorkerHost.load(() => registerPaymentsFunctions(functions));
  const store = new DurableStore(options.durableTable);
  await store.ensure();
  const backend = new LocalDurableBackend({
    store,
    host,
    crashBefore: options.crashBefore,
    restartDelayMs: options.restartDelayMs,
    timerScale: options.timerScale,
  });
  const api = await DurableHttpApi.start(backend, new Set([CHARGE_ORCHESTRATION]));
  const clientData = api.clientBindingData();

  /**
   * One delivery through the registered trigger. Resolves to the trigger's result (the host ignores it;
   * returning completes the message), rejects with the handler's error (the host abandons the message).
   */
  async function deliver(body: unknown, metadata: ServiceBusMetadata): Promise<PaymentDeliveryResult> {
    try {
      return (await host.invoke('paymentsConsumer', serviceBusRequest(host, body, metadata, clientData))) as PaymentDeliveryResult;
    } catch (error) {
      throw error instanceof InvocationFailedError ? error.error : error;
    }
  }

  const workflow = {
    counters: backend.counters,
    /** The trigger's Durable client requests: starts and status reads. */
    clientCalls: api.calls,
    /** The client API's base URL (`rpcBaseUrl`), e.g. for the operator's retry command. */
    rpcBaseUrl: api.rpcBaseUrl,
    /** The `paymentCharge` entity's saved state. */
    entityState: (entityKey: string) => backend.entityState<ChargeEntityState>(`@${CHARGE_ENTITY.toLowerCase()}@${entityKey}`),
    drain: () => backend.drain(),
    stop: async () => {
      await backend.stop();
      await api.close();
    },
  };
  return { host, backend, functions, parts: functions.parts(), deliver, workflow };
}

/**
 * The invocation request of one Service Bus delivery to `paymentsConsumer`, as the host sends it: the body as
 * text, PascalCase trigger metadata, the Durable client binding's data.
 */
export function serviceBusRequest(host: WorkerHost, body: unknown, metadata: ServiceBusMetadata, clientData: string): RpcInvocationRequest {
  return {
    inputData: [
      { name: host.bindingName('paymentsConsumer', 'serviceBusTrigger'), data: { string: bodyText(body) } },
      { name: host.bindingName('paymentsConsumer', 'durableClient'), data: { string: clientData } },
    ],
    triggerMetadata: serviceBusTriggerMetadata(metadata),
  };
}

/** The message body as the Service Bus trigger passes it: its text (the worker parses JSON text into an object). */
function bodyText(body: unknown): string {
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return JSON.stringify(body);
}

/** Trigger metadata as the Service Bus extension sends it: PascalCase names, typed data (the worker camel-cases them). */
function serviceBusTriggerMetadata(m: ServiceBusMetadata): Record<string, RpcTypedData> {
  const meta: Record<string, RpcTypedData> = {
    DeliveryCount: { int: m.deliveryCount ?? 1 },
    EnqueuedTimeUtc: { string: new Date().toISOString() },
    ApplicationProperties: { json: JSON.stringify(m.applicationProperties ?? {}) },
  };
  if (m.messageId !== undefined && m.messageId !== null)
    meta.MessageId = { string: typeof m.messageId === 'string' ? m.messageId : JSON.stringify(m.messageId) };
  if (m.correlationId !== undefined) meta.CorrelationId = { string: m.correlationId };
  return meta;
}
