import type { InvocationContext, Timer } from '@azure/functions';
import type { Feature } from '../config/features';
import { ConfigurationError } from 'azure-functions-idempotency';
import { allowMethods } from '../http/allowedMethods';
import { notConfiguredAnswer } from '../http/notConfigured';
import { makeOrdersHandler } from '../orders/ordersHandler';
import { assertLeaseWithinRetention, assertPatienceCoversCharge, assertRetryBudgetWithinRetention } from '../payments/chargePatience';
import { appSettings, appTelemetry, featureProblem } from './appContext';
import { expiryTimerFromSettings } from './expiryTimer';
import { ledgerCheckFromSettings, noLedgerCheckReason } from './ledgerCheckTimer';
import {
  functionsHttpHandler,
  HTTP_FUNCTIONS,
  paymentStatusFromSettings,
  paymentsApiFromSettings,
  paymentWebhookFromSettings,
  toApiRequest,
  toResponseInit,
  type FunctionsHttpHandler,
  type HttpFunctionName,
} from './http';
import { ordersDepsFromSettings } from './orders';
import { paymentsFunctionsFrom, type PaymentsFunctions } from './paymentsFunctions';
import { rewardsFromSettings, rewardsHandler, type RewardsHandler } from './rewards';

/**
 * The handlers the registrations in `src/functions` register, built from the app's settings
 * (`appContext`: read and validated once). Each function is called once, when the worker loads its
 * entry point. A bad shared setting throws there, naming it (the worker indexes nothing). A bad or missing
 * setting of one feature stops that feature only, with one error log line naming the setting:
 * - the queue consumers and the timer are **not registered**: their messages wait in the queue (TTL 14 days)
 *   until the setting is fixed. Registered and throwing per message, a consumer would abandon every message
 *   `maxDeliveryCount` times and dead-letter the whole queue; the timer's sweep just runs later (records are
 *   kept longer, never shorter);
 * - the HTTP functions are **registered and answer 503** (`notConfiguredAnswer`) and log the setting per
 *   request: an unregistered route would answer 404, which tells a client (or a provider's webhook
 *   retries) the resource does not exist rather than that it is unavailable for now.
 */

/** The feature built by `build`, or why it cannot run (its settings' problems, or the ConfigurationError `build` throws). */
function buildFeature<T>(feature: Feature, build: () => T): { ok: true; value: T } | { ok: false; problem: string } {
  const problem = featureProblem(feature);
  if (problem !== undefined) return { ok: false, problem };
  try {
    return { ok: true, value: build() };
  } catch (error) {
    if (error instanceof ConfigurationError) return { ok: false, problem: error.message };
    throw error;
  }
}

/** The feature built by `build`, or undefined after one error log line naming why it cannot run. */
function featureOrNothing<T>(feature: Feature, functions: string, consequence: string, build: () => T): T | undefined {
  const built = buildFeature(feature, build);
  if (built.ok) return built.value;
  console.error(`[config] ${functions} not started: ${built.problem}. ${consequence}; the other functions run.`);
  return undefined;
}

/** The payments trigger, the charge orchestration, entity and activity (`paymentsFunctions.ts`); undefined when not configured. */
export function paymentsFunctions(): PaymentsFunctions | undefined {
  const settings = appSettings();
  return featureOrNothing('payments', 'paymentsConsumer, chargePayment, paymentCharge, chargeProvider', 'Payment messages wait in their queue', () => {
    // Validated and built at start, not at the first message (no I/O).
    assertPatienceCoversCharge(settings);
    assertRetryBudgetWithinRetention(settings);
    assertLeaseWithinRetention(settings);
    return paymentsFunctionsFrom(settings, { telemetry: appTelemetry() });
  });
}

/** The orders trigger (the logic is in `src/orders`); undefined when not configured. Returning completes the message; throwing abandons it. */
export function ordersFunction(): ((message: unknown, context: InvocationContext) => Promise<void>) | undefined {
  const deps = featureOrNothing('orders', 'ordersConsumer', 'Order messages wait in their queue', () =>
    ordersDepsFromSettings(appSettings(), { telemetry: appTelemetry() }),
  );
  if (!deps) return undefined;
  const handler = makeOrdersHandler(deps);
  return async (message, context) => {
    await handler(message, context);
  };
}

/** The expiry timer's handler; undefined when not configured (records are kept until it runs again). */
export function expiryTimerFunction(): ((timer: Timer, context: InvocationContext) => Promise<void>) | undefined {
  return featureOrNothing('expiryTimer', 'expiryTimer', 'Expired records stay until the sweep runs again', () => expiryTimerFromSettings(appSettings()));
}

/**
 * The ledger check timer's handler; undefined when not configured (the check resumes from its checkpoint once it is).
 * With `PAYMENT_PROVIDER_LEDGER=none` it is registered and skips each tick, and the app says once, at start (warn),
 * that no ledger check runs and why.
 */
export function ledgerCheckFunction(): ((timer: Timer, context: InvocationContext) => Promise<void>) | undefined {
  return featureOrNothing('ledgerCheck', 'ledgerCheck', 'Charges are matched to their records once it runs again, from its checkpoint', () => {
    const settings = appSettings();
    const none = noLedgerCheckReason(settings);
    if (none) console.warn(`[config] ledgerCheck: no ledger check runs: ${none}.`);
    return ledgerCheckFromSettings(settings, { telemetry: appTelemetry() });
  });
}

/** The rewards trigger's handler (Event Hubs batches); undefined when not configured (events wait in the hub, within its retention). */
export function rewardsFunction(): RewardsHandler | undefined {
  return featureOrNothing('rewards', 'rewardsConsumer', 'Reward events wait in the hub (for its retention period)', () =>
    rewardsHandler(rewardsFromSettings(appSettings(), { telemetry: appTelemetry() })),
  );
}

/** An HTTP function of `feature`: its endpoint, or a 503 answer (and an error log line per request) when not configured. */
function httpFeature(feature: Feature, name: HttpFunctionName, build: () => FunctionsHttpHandler): FunctionsHttpHandler {
  const built = buildFeature(feature, build);
  if (built.ok) return built.value;
  console.error(`[config] ${name} answers 503: ${built.problem}; the other functions run.`);
  const unavailable = allowMethods(HTTP_FUNCTIONS[name].methods, async () => notConfiguredAnswer());
  return async (request, context) => {
    context.error(`${name} is not configured: ${built.problem}`);
    return toResponseInit(await unavailable(await toApiRequest(request)));
  };
}

/** `POST /api/payments` (Idempotency-Key), built once from the settings; sends nothing until a request. */
export function paymentsApiFunction(): FunctionsHttpHandler {
  return httpFeature('paymentsApi', 'paymentsApi', () => {
    const endpoint = paymentsApiFromSettings(appSettings());
    return functionsHttpHandler((telemetry) => endpoint(telemetry), appTelemetry);
  });
}

/** `GET /api/payments/{paymentId}` (where a 202 points), built once from the settings. */
export function paymentStatusFunction(): FunctionsHttpHandler {
  return httpFeature('paymentStatus', 'paymentStatus', () => functionsHttpHandler(paymentStatusFromSettings(appSettings()), appTelemetry));
}

/** `POST /api/webhooks/payment-provider` (signed provider events), built once from the settings. */
export function paymentWebhookFunction(): FunctionsHttpHandler {
  return httpFeature('webhook', 'paymentProviderWebhook', () => {
    const endpoint = paymentWebhookFromSettings(appSettings());
    return functionsHttpHandler((telemetry) => endpoint(telemetry), appTelemetry);
  });
}
