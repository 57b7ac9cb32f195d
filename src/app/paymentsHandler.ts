import type { InvocationContext } from '@azure/functions';
import { messageInfoFrom } from '../messaging/messageInfo';
import { NO_RIDE_OUT, rideOutStoreOutage, type RideOutPlan, type RideOutReport } from '../messaging/storeOutage';
import type { ChargeWorkflow } from '../payments/ChargeWorkflow';
import type { PaymentDeliveryResult, PaymentsConsumer } from '../payments/PaymentsConsumer';
import { MetricNames, type LogFields, type Telemetry } from '../telemetry/Telemetry';
import { invocationLogSink } from '../telemetry/invocationLogSink';
import { ShardLayoutRefusedError } from './shardLayoutGate';

export interface PaymentsHandlerDeps {
  readonly consumer: () => PaymentsConsumer;
  readonly telemetry: () => Telemetry;
  /** The charge workflow client for this invocation (Durable's client comes from the context). */
  readonly workflow: (context: InvocationContext) => ChargeWorkflow;
  /**
   * How a delivery waits out a store outage inside its invocation while the host renews the lock
   * (src/messaging/storeOutage.ts); default none: the first store failure abandons the message.
   */
  readonly rideOut?: RideOutPlan;
  /** Real time for the ride-out (the lock renewal's time), epoch ms; default `Date.now`. */
  readonly nowMs?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Sharded (N > 1): the check that this shard's table holds no payment record of another shard (`shardLayoutGate`),
   * passed before each delivery's claim; it throws `ShardLayoutRefusedError` while the layout is refused.
   */
  readonly layoutGate?: (telemetry: Telemetry) => Promise<void>;
}

/**
 * The Service Bus trigger handler of the payments queue: returning completes the message,
 * throwing abandons it (Service Bus redelivers, dead-lettering after maxDeliveryCount). A store
 * outage is first waited out inside the invocation (`rideOut`), so it does not spend deliveries.
 * Registered for Azure in `payments.ts`; tests and the demo call the same factory's handler.
 */
export function makePaymentsHandler(deps: PaymentsHandlerDeps): (message: unknown, context: InvocationContext) => Promise<PaymentDeliveryResult> {
  return async (message, context) => {
    const telemetry = deps.telemetry().withSink(invocationLogSink(context));
    const consumer = deps.consumer().withWorkflow(deps.workflow(context));
    const info = messageInfoFrom(context.triggerMetadata);
    const messageId = typeof info.messageId === 'string' || typeof info.messageId === 'number' ? String(info.messageId) : undefined;
    const fields: LogFields = { consumer: 'payments', messageId, deliveryCount: info.deliveryCount };
    const plan = deps.rideOut ?? NO_RIDE_OUT;
    const run = () =>
      rideOutStoreOutage(
        async () => {
          await deps.layoutGate?.(telemetry);
          return consumer.handle(message, info, telemetry);
        },
        { plan, nowMs: deps.nowMs, sleep: deps.sleep, report: outageReport(telemetry, fields) },
      );
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof ShardLayoutRefusedError) || plan.budgetMs <= 0) throw error;
    }
    // Refused: never claimed. Waited out inside the invocation (the host renews the lock, as for a store outage), then
    // asked again; still refused, thrown: the message is abandoned, one delivery spent per wait, not one per second.
    await (deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))))(plan.budgetMs);
    await deps.layoutGate?.(telemetry);
    return run();
  };
}

/** `messages.store_outage.waits` per wait; a warning at the first wait, an info line on recovery, an error when it gives up. */
export function outageReport(telemetry: Telemetry, fields: LogFields): RideOutReport {
  return {
    waiting(waits, delayMs, error) {
      telemetry.count(MetricNames.storeOutageWaits, { consumer: String(fields.consumer) });
      if (waits === 1)
        telemetry.log('warn', `${fields.consumer}: the store does not answer (${error.message}); the delivery waits for it, its lock renewed`, {
          ...fields,
          outcome: 'store-outage-wait',
          delayMs,
        });
    },
    recovered(waits, waitedMs) {
      telemetry.log('info', `${fields.consumer}: the store answers again after ${waitedMs} ms (${waits} waits)`, {
        ...fields,
        outcome: 'store-outage-recovered',
        waitedMs,
      });
    },
    gaveUp(waits, waitedMs, error) {
      telemetry.log('error', `${fields.consumer}: the store did not answer within ${waitedMs} ms (${waits} waits): abandoned, one delivery spent`, {
        ...fields,
        outcome: 'store-outage-abandoned',
        reason: error.message.slice(0, 300),
      });
    },
  };
}
