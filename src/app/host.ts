import type { InvocationContext, Timer } from '@azure/functions';
import { makeOrdersHandler } from '../orders/ordersHandler';
import { appSettings, appTelemetry } from './appContext';
import { expiryTimerFromSettings } from './expiryTimer';
import { functionsHttpHandler, paymentStatusFromSettings, paymentsApiFromSettings, paymentWebhookFromSettings, type FunctionsHttpHandler } from './http';
import { ordersDepsFromSettings } from './orders';
import { paymentsFunctionsFrom, type PaymentsFunctions } from './paymentsFunctions';

/**
 * The handlers the registrations in `src/functions` register, built from the app's settings
 * (`appContext`: read and validated once). Each function is called once, when the worker loads its
 * entry point: a misconfiguration throws there, naming the setting, and the worker indexes nothing.
 */

/** The payments trigger, the charge orchestration, entity and activity (`paymentsFunctions.ts`). */
export function paymentsFunctions(): PaymentsFunctions {
  // Validate the settings and build the provider client at start, not at the first message (no I/O).
  return paymentsFunctionsFrom(appSettings(), { telemetry: appTelemetry() });
}

/** The orders trigger (the logic is in `src/orders`). Returning completes the message; throwing abandons it. */
export function ordersFunction(): (message: unknown, context: InvocationContext) => Promise<void> {
  const handler = makeOrdersHandler(ordersDepsFromSettings(appSettings(), { telemetry: appTelemetry() }));
  return async (message, context) => {
    await handler(message, context);
  };
}

/** The expiry timer's handler. */
export function expiryTimerFunction(): (timer: Timer, context: InvocationContext) => Promise<void> {
  return expiryTimerFromSettings(appSettings());
}

/** `POST /api/payments` (Idempotency-Key), built once from the settings; sends nothing until a request. */
export function paymentsApiFunction(): FunctionsHttpHandler {
  const endpoint = paymentsApiFromSettings(appSettings());
  return functionsHttpHandler((telemetry) => endpoint(telemetry), appTelemetry);
}

/** `GET /api/payments/{paymentId}` (where a 202 points), built once from the settings. */
export function paymentStatusFunction(): FunctionsHttpHandler {
  return functionsHttpHandler(paymentStatusFromSettings(appSettings()), appTelemetry);
}

/** `POST /api/webhooks/payment-provider` (signed provider events), built once from the settings. */
export function paymentWebhookFunction(): FunctionsHttpHandler {
  const endpoint = paymentWebhookFromSettings(appSettings());
  return functionsHttpHandler((telemetry) => endpoint(telemetry), appTelemetry);
}
