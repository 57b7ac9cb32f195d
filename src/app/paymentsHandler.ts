import type { InvocationContext } from '@azure/functions';
import { messageInfoFrom } from '../messaging/messageInfo';
import type { ChargeWorkflow } from '../payments/ChargeWorkflow';
import type { PaymentDeliveryResult, PaymentsConsumer } from '../payments/PaymentsConsumer';
import type { Telemetry } from '../telemetry/Telemetry';
import { invocationLogSink } from '../telemetry/invocationLogSink';

export interface PaymentsHandlerDeps {
  readonly consumer: () => PaymentsConsumer;
  readonly telemetry: () => Telemetry;
  /** The charge workflow client for this invocation (Durable's client comes from the context). */
  readonly workflow: (context: InvocationContext) => ChargeWorkflow;
}

/**
 * The Service Bus trigger handler of the payments queue: returning completes the message,
 * throwing abandons it (Service Bus redelivers, dead-lettering after maxDeliveryCount).
 * Registered for Azure in `payments.ts`; tests and the demo call the same factory's handler.
 */
export function makePaymentsHandler(deps: PaymentsHandlerDeps): (message: unknown, context: InvocationContext) => Promise<PaymentDeliveryResult> {
  return async (message, context) => {
    const telemetry = deps.telemetry().withSink(invocationLogSink(context));
    const consumer = deps.consumer().withWorkflow(deps.workflow(context));
    return consumer.handle(message, messageInfoFrom(context.triggerMetadata), telemetry);
  };
}
