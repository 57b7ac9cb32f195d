import type { RpcInvocationRequest, RpcTypedData, WorkerHost } from './WorkerHost';

/** A delivery's trigger metadata, as the demo's bus knows it. */
export interface ServiceBusMetadata {
  readonly messageId?: unknown;
  readonly deliveryCount?: number;
  readonly correlationId?: string;
  readonly applicationProperties?: Readonly<Record<string, unknown>>;
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
