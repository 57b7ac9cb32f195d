import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { Settings } from '../config/settings';
import { systemClock } from 'azure-functions-idempotency';
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import type { ApiAnswer, ApiRequest } from '../http/httpTypes';
import { ALL_HTTP_METHODS, allowMethods } from '../http/allowedMethods';
import { paymentsApi, type PaymentQueue } from '../http/paymentsApi';
import { PaymentStateTable } from '../http/PaymentStateTable';
import { paymentStatus } from '../http/paymentStatus';
import { PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';
import { paymentWebhook } from '../http/paymentWebhook';
import { invocationLogSink } from '../telemetry/invocationLogSink';
import { Telemetry } from '../telemetry/Telemetry';
import { serviceBusPaymentQueue } from './paymentQueue';
import { paymentShardsOf } from './shardStores';
import { consumerStoreFromSettings, routedByConsumer, storeFromSettings, tableClientsOf, type WiringOverrides } from './stores';
import { spreadByKey } from './spreadByKey';

/** A Functions v4 HTTP handler. */
export type FunctionsHttpHandler = (request: HttpRequest, context: InvocationContext) => Promise<HttpResponseInit>;

/** Every method the HTTP functions are registered for (the app answers 405 to those it does not allow). */
export { ALL_HTTP_METHODS };

/** The HTTP functions: name -> route (after `/api/`), the methods the app answers (others: 405 with `Allow`), auth level. */
export const HTTP_FUNCTIONS = {
  paymentsApi: { route: 'payments', methods: ['POST'], authLevel: 'function' },
  paymentStatus: { route: 'payments/{paymentId}', methods: ['GET'], authLevel: 'function' },
  paymentProviderWebhook: { route: 'webhooks/payment-provider', methods: ['POST'], authLevel: 'anonymous' },
} as const satisfies Record<string, { route: string; methods: readonly string[]; authLevel: 'function' | 'anonymous' }>;
export type HttpFunctionName = keyof typeof HTTP_FUNCTIONS;

/** The HTTP overrides: those of every wiring, plus the payments queue (the local host's sender). */
export interface HttpOverrides extends WiringOverrides {
  readonly queue?: PaymentQueue;
}

/** The request as the runtime-free endpoints read it: the raw body bytes, headers, method and URL. */
export async function toApiRequest(request: HttpRequest): Promise<ApiRequest> {
  const body = Buffer.from(await request.arrayBuffer());
  return { method: request.method, url: request.url, headers: { get: (name) => request.headers.get(name) }, body };
}

/** The answer as the Functions host sends it: status, headers, the body bytes unchanged. */
export function toResponseInit(answer: ApiAnswer): HttpResponseInit {
  return { status: answer.status, headers: { ...answer.headers }, body: new Uint8Array(answer.body) };
}

/** Adapts a runtime-free endpoint to a Functions HTTP handler, its log lines also going to the invocation's log. */
export function functionsHttpHandler(
  endpoint: (telemetry: Telemetry) => (request: ApiRequest) => Promise<ApiAnswer>,
  telemetry: () => Telemetry,
): FunctionsHttpHandler {
  return async (request, context) => {
    const handle = endpoint(telemetry().withSink(invocationLogSink(context)));
    return toResponseInit(await handle(await toApiRequest(request)));
  };
}

/**
 * The dedup store of `POST /api/payments`: the idempotency table (its keys are scoped `http-payments`),
 * records kept `HTTP_IDEMPOTENCY_RETENTION_HOURS` (24 h) after their last write and swept by the expiry
 * timer like every record (the sweep reads each record's own retention end), lease `HTTP_IDEMPOTENCY_LEASE_SECONDS`.
 */
export function httpStoreFromSettings(
  settings: Settings,
  overrides: WiringOverrides = {},
  retentionHours: number = settings.HTTP_IDEMPOTENCY_RETENTION_HOURS,
): TableIdempotencyStore {
  return new TableIdempotencyStore(tableClientsOf(settings, overrides)(settings.IDEMPOTENCY_TABLE_NAME), {
    partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
    leaseMs: overrides.leaseMs ?? settings.HTTP_IDEMPOTENCY_LEASE_SECONDS * 1000,
    retentionMs: overrides.retentionMs ?? Math.round(retentionHours * 3_600_000),
    cacheSize: settings.IDEMPOTENCY_CACHE_SIZE,
    callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS,
    clock: overrides.clock,
  });
}

/** `POST /api/payments` wired from settings: the endpoint per telemetry (per invocation), sharing one store and queue. Sends nothing. */
export function paymentsApiFromSettings(
  settings: Settings,
  overrides: HttpOverrides = {},
): (telemetry?: Telemetry) => (request: ApiRequest) => Promise<ApiAnswer> {
  const own = httpStoreFromSettings(settings, overrides);
  const queue = overrides.queue ?? serviceBusPaymentQueue(settings);
  // The `accepted` marker in the owner shard's table, with the same retention (its own payments: this store, as before).
  const shards = paymentShardsOf(settings, overrides);
  const markers = shards.ownerOf((tables, shard) => (shard === shards.index ? own : httpStoreFromSettings(settings, { ...overrides, tableClient: tables })));
  // The Idempotency-Key records spread over every shard's account by key, not all in the receiving app's (issue 63).
  const store = spreadByKey(
    shards.ownerOf((tables, shard) => (shard === shards.index ? own : httpStoreFromSettings(settings, { ...overrides, tableClient: tables }))),
    own,
  );
  return (telemetry = overrides.telemetry ?? new Telemetry()) =>
    allowMethods(
      HTTP_FUNCTIONS.paymentsApi.methods,
      paymentsApi({ store, queue, markers, callerIdentity: settings.HTTP_CALLER_IDENTITY, telemetry, clock: overrides.clock }),
    );
}

/** The Payment rows the webhook writes (table `PAYMENT_STATE_TABLE_NAME`). */
export function paymentStateFromSettings(settings: Settings, overrides: WiringOverrides = {}): PaymentStateTable {
  return new PaymentStateTable(tableClientsOf(settings, overrides)(settings.PAYMENT_STATE_TABLE_NAME), overrides.clock ?? systemClock);
}

/**
 * `POST /api/webhooks/payment-provider` wired from settings: secret `WEBHOOK_SIGNING_SECRET` (in Azure a
 * Key Vault reference the platform resolves), window `WEBHOOK_TOLERANCE_SECONDS`, event ids kept
 * `WEBHOOK_RETENTION_HOURS` in the idempotency table. Sends nothing.
 */
export function paymentWebhookFromSettings(
  settings: Settings,
  overrides: WiringOverrides = {},
): (telemetry?: Telemetry) => (request: ApiRequest) => Promise<ApiAnswer> {
  const own = httpStoreFromSettings(settings, overrides, settings.WEBHOOK_RETENTION_HOURS);
  const shards = paymentShardsOf(settings, overrides);
  // The event ids spread over every shard's account by event id: the provider sends every webhook to one app (issue 63).
  const store = spreadByKey(
    shards.ownerOf((tables, shard) =>
      shard === shards.index ? own : httpStoreFromSettings(settings, { ...overrides, tableClient: tables }, settings.WEBHOOK_RETENTION_HOURS),
    ),
    own,
  );
  // The Payment row in the owner shard's table (one shard: this app's).
  const payments = shards.ownerOf((tables) => paymentStateFromSettings(settings, { ...overrides, tableClient: tables }));
  return (telemetry = overrides.telemetry ?? new Telemetry()) =>
    allowMethods(
      HTTP_FUNCTIONS.paymentProviderWebhook.methods,
      paymentWebhook({
        store,
        payments,
        secrets: webhookSecretsOf(settings),
        toleranceSec: settings.WEBHOOK_TOLERANCE_SECONDS,
        telemetry,
        clock: overrides.clock,
      }),
    );
}

/**
 * The webhook secrets in use: `WEBHOOK_SIGNING_SECRET` and, during a rotation, `WEBHOOK_SIGNING_SECRET_PREVIOUS`.
 * An unresolved Key Vault reference (the vault entry is missing, or the identity may not read it) reaches the
 * app as the reference text itself: it is never used as a secret (with none left, the webhook answers 503).
 */
export function webhookSecretsOf(settings: Settings): string[] {
  return [settings.WEBHOOK_SIGNING_SECRET, settings.WEBHOOK_SIGNING_SECRET_PREVIOUS].filter(
    (secret): secret is string => secret !== undefined && !secret.startsWith('@Microsoft.KeyVault('),
  );
}

/**
 * `GET /api/payments/{paymentId}`: the payment's status from the payments consumer's own record, in the owner shard's
 * store (`PAYMENT_SHARD_TABLE_ENDPOINTS`; without it a payment of another shard is answered 421).
 */
export function paymentStatusFromSettings(settings: Settings, overrides: WiringOverrides = {}): () => (request: ApiRequest) => Promise<ApiAnswer> {
  // IDEMPOTENCY_STORE=cosmos: the payments consumer's records are in Cosmos (one container every shard shares), the
  // API's `accepted` records in the owner's table.
  const recordsOf = paymentShardsOf(settings, overrides).ownerOf((tables) => {
    const table = storeFromSettings(settings, { ...overrides, tableClient: tables });
    return routedByConsumer(new Set([PAYMENTS_CONSUMER]), consumerStoreFromSettings(settings, overrides, table), table);
  });
  const endpoint = allowMethods(HTTP_FUNCTIONS.paymentStatus.methods, paymentStatus(recordsOf));
  return () => endpoint;
}
