import type * as FunctionsCore from '../../tools/local/host/functionsCore';
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import type { LocalHttpHandler } from '../../tools/local/httpHost';
import { LocalHttpHost } from '../../tools/local/httpHost';
import { signatureHeader } from '../../src/http/webhookSignature';
import { useAzurite } from '../support/azurite';

/**
 * One HTTP feature's bad setting never stops another, over real HTTP on Azurite: the app's own registrations
 * (`src/functions/http.ts`, loaded as the worker loads it, with the settings in the environment) served by the
 * local host. The function whose setting is bad answers 503 (a problem document, `Retry-After`) and logs the
 * setting's name on every request; the other functions work.
 */
const azurite = useAzurite();
const KEY = 'feature-key-0001';
const SECRET = 'whsec_feature_0123456789abcdef';

interface Loaded {
  host: LocalHttpHost;
  logs: string[];
  tables: { idempotency: string; paymentState: string };
}
let loaded: Loaded | undefined;
afterEach(async () => {
  await loaded?.host.stop();
  loaded = undefined;
});

/** Loads `src/functions/http.ts` with `settings` (plus the Azurite tables) and serves what it registered. */
async function serve(settings: Record<string, string>): Promise<Loaded> {
  const prefix = `f${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const tables = { idempotency: `${prefix}idem`, paymentState: `${prefix}state` };
  for (const name of Object.values(tables))
    await TableClient.fromConnectionString(azurite().connectionString, name, { allowInsecureConnection: true }).createTable();
  const env = {
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azurite().connectionString,
    IDEMPOTENCY_TABLE_NAME: tables.idempotency,
    PAYMENT_STATE_TABLE_NAME: tables.paymentState,
    ...settings,
  };
  const saved = process.env;
  process.env = env;
  const logs: string[] = [];
  const spy = jest.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logs.push(`start ${args.map(String).join(' ')}`));
  let registered: Array<{ metadata: { name: string; bindings: Record<string, Record<string, unknown>> }; callback: unknown }> = [];
  try {
    jest.isolateModules(() => {
      const core = require('@azure/functions-core') as typeof FunctionsCore;
      registered = core.captureRegistrations(() => require('../../src/functions/http'));
    });
  } finally {
    spy.mockRestore();
    process.env = saved;
  }
  const routes = registered.map((f) => {
    const trigger = Object.values(f.metadata.bindings).find((b) => b.type === 'httpTrigger')!;
    return {
      name: f.metadata.name,
      methods: trigger.methods as string[],
      route: trigger.route as string,
      authLevel: trigger.authLevel as 'function' | 'anonymous',
      handler: f.callback as LocalHttpHandler,
    };
  });
  const host = await LocalHttpHost.start({ routes, functionKeys: { default: KEY }, log: (name, level, message) => logs.push(`${name} ${level} ${message}`) });
  return (loaded = { host, logs, tables });
}

const event = (paymentId: string) => ({
  id: `evt_${paymentId}`,
  type: 'charge.succeeded',
  created: 1,
  data: { paymentId, chargeId: 'ch_1', amount: 100, currency: 'EUR', version: 1 },
});
async function deliver(url: string, body: unknown) {
  const raw = JSON.stringify(body);
  return fetch(`${url}/api/webhooks/payment-provider`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'provider-signature': signatureHeader(SECRET, Math.floor(Date.now() / 1000), Buffer.from(raw)) },
    body: raw,
  });
}

test('webhook: a secret shorter than 16 characters makes the webhook answer 503 (logged with the setting); the payments API and status still answer', async () => {
  const { host, logs } = await serve({
    WEBHOOK_SIGNING_SECRET: 'short',
    SERVICEBUS_CONNECTION_STRING: 'Endpoint=sb://127.0.0.1;SharedAccessKeyName=k;SharedAccessKey=v',
  });
  const webhook = await deliver(host.url, event('pay-f1'));
  expect(webhook.status).toBe(503);
  expect(webhook.headers.get('content-type')).toBe('application/problem+json');
  expect(webhook.headers.get('retry-after')).toBe('60');
  expect(await webhook.json()).toMatchObject({ type: '/problems/not-configured', status: 503 });
  expect(logs.filter((l) => l.startsWith('start '))).toEqual([expect.stringMatching(/paymentProviderWebhook answers 503: .*WEBHOOK_SIGNING_SECRET/)]);
  expect(logs.some((l) => l.startsWith('paymentProviderWebhook error') && l.includes('WEBHOOK_SIGNING_SECRET'))).toBe(true);
  // The other features run: the status endpoint reads the store (404 for an unknown payment), the API validates.
  expect((await fetch(`${host.url}/api/payments/pay-unknown`, { headers: { 'x-functions-key': KEY } })).status).toBe(404);
  const noKey = await fetch(`${host.url}/api/payments`, {
    method: 'POST',
    headers: { 'x-functions-key': KEY, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(noKey.status).toBe(400);
});

test('payments API: without a Service Bus setting it answers 503 (logged with the setting); the webhook applies a signed event', async () => {
  const { host, logs, tables } = await serve({ WEBHOOK_SIGNING_SECRET: SECRET });
  const api = await fetch(`${host.url}/api/payments`, {
    method: 'POST',
    headers: { 'x-functions-key': KEY, 'content-type': 'application/json', 'idempotency-key': 'k-1' },
    body: JSON.stringify({ paymentId: 'pay-f2', customerId: 'c', amount: 1, currency: 'EUR' }),
  });
  expect(api.status).toBe(503);
  expect(await api.json()).toMatchObject({ type: '/problems/not-configured' });
  expect(logs.filter((l) => l.startsWith('start '))).toEqual([
    expect.stringMatching(/paymentsApi answers 503: .*SERVICEBUS_FULLY_QUALIFIED_NAMESPACE or SERVICEBUS_CONNECTION_STRING/),
  ]);
  const webhook = await deliver(host.url, event('pay-f2'));
  expect(webhook.status).toBe(200);
  expect(await webhook.json()).toEqual({ received: true, eventId: 'evt_pay-f2', outcome: 'applied' });
  const rows = TableClient.fromConnectionString(azurite().connectionString, tables.paymentState, { allowInsecureConnection: true }).listEntities();
  const all = [];
  for await (const row of rows) all.push(row);
  expect(all).toHaveLength(1);
});
