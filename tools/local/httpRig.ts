import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { ALL_HTTP_METHODS } from '../../src/http/allowedMethods';
import {
  functionsHttpHandler,
  HTTP_FUNCTIONS,
  type HttpFunctionName,
  paymentStateFromSettings,
  paymentStatusFromSettings,
  paymentsApiFromSettings,
  paymentWebhookFromSettings,
} from '../../src/app/http';
import { loadSettings } from '../../src/config/settings';
import type { Clock } from 'azure-functions-idempotency/internal';
import type { PaymentQueue } from '../../src/http/paymentsApi';
import type { PaymentRequested } from '../../src/payments/schema';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { LocalHttpHost, type LocalHttpRoute } from './httpHost';

/** A message the payments API sent (what Service Bus would hold). */
export interface SentPayment {
  readonly messageId: string;
  readonly body: PaymentRequested;
}

/**
 * The payments queue for local runs: records what is sent (`MessageId` = paymentId, as the Service Bus
 * sender does); `delayMs` holds each send (a slow broker), `failNext(n)` makes the next n sends fail.
 */
export class RecordingPaymentQueue implements PaymentQueue {
  readonly sent: SentPayment[] = [];
  delayMs = 0;
  private failures = 0;

  failNext(count: number): void {
    this.failures = count;
  }

  async send(payment: PaymentRequested, signal: AbortSignal): Promise<void> {
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    signal.throwIfAborted();
    if (this.failures > 0) {
      this.failures--;
      throw new Error('service bus unavailable (injected)');
    }
    this.sent.push({ messageId: payment.paymentId, body: payment });
  }
}

export interface HttpRigOptions {
  /** Table Storage connection string (Azurite). */
  readonly tableConnectionString: string;
  readonly tablePrefix?: string;
  /** Function keys by name; default `{ default: 'local-default-key' }`. */
  readonly functionKeys?: Readonly<Record<string, string>>;
  readonly queue?: PaymentQueue;
  readonly leaseMs?: number;
  readonly retentionMs?: number;
  readonly clock?: Clock;
  readonly telemetry?: Telemetry;
  /** Extra settings (e.g. `HTTP_CALLER_IDENTITY`, `WEBHOOK_SIGNING_SECRET`). */
  readonly settings?: Readonly<Record<string, string>>;
  readonly port?: number;
  /** Told of every invocation log line (what the Functions host would log). */
  readonly log?: (functionName: string, level: string, message: string) => void;
}

/**
 * The HTTP functions wired for local runs (tests and the demo): the app's own wiring (`src/app/http.ts`)
 * with overrides (Azurite tables, the local queue, clock, lease), served over real HTTP on loopback by
 * {@link LocalHttpHost} with the routes and auth levels of `src/functions/http.ts`.
 */
export async function startHttpRig(options: HttpRigOptions) {
  const prefix = options.tablePrefix ?? `h${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const table = (name: string) =>
    TableClient.fromConnectionString(options.tableConnectionString, `${prefix}${name}`, {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 2, retryDelayInMs: 50, maxRetryDelayInMs: 500 },
    });
  const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: options.tableConnectionString, ...options.settings });
  const telemetry = options.telemetry ?? new Telemetry();
  const queue = options.queue ?? new RecordingPaymentQueue();
  const idempotencyTable = table(settings.IDEMPOTENCY_TABLE_NAME);
  await idempotencyTable.createTable();
  const overrides = { tableClient: table, clock: options.clock, telemetry, leaseMs: options.leaseMs, retentionMs: options.retentionMs, queue };
  const paymentsApi = paymentsApiFromSettings(settings, overrides);
  const webhook = paymentWebhookFromSettings(settings, overrides);
  const paymentStateTable = table(settings.PAYMENT_STATE_TABLE_NAME);
  await paymentStateTable.createTable();
  const paymentState = paymentStateFromSettings(settings, overrides);
  // The routes, methods and auth levels of src/functions/http.ts (registered for every method: the app answers 405).
  const handlers = {
    paymentsApi: functionsHttpHandler(
      (t) => paymentsApi(t),
      () => telemetry,
    ),
    paymentStatus: functionsHttpHandler(paymentStatusFromSettings(settings, overrides), () => telemetry),
    paymentProviderWebhook: functionsHttpHandler(
      (t) => webhook(t),
      () => telemetry,
    ),
  };
  const routes: LocalHttpRoute[] = (Object.keys(HTTP_FUNCTIONS) as HttpFunctionName[]).map((name) => ({
    name,
    methods: ALL_HTTP_METHODS,
    route: HTTP_FUNCTIONS[name].route,
    authLevel: HTTP_FUNCTIONS[name].authLevel,
    handler: handlers[name],
  }));
  const functionKeys = options.functionKeys ?? { default: 'local-default-key' };
  const host = await LocalHttpHost.start({ routes, functionKeys, port: options.port, log: options.log });
  return { host, url: host.url, queue, idempotencyTable, paymentState, settings, stop: () => host.stop() };
}
