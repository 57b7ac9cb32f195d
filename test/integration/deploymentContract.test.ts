import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { azdParameters, compiledMainTemplate, Deployment } from '../support/compiledTemplate';

/**
 * The deployment contract: the built app (`npm run build`, files matched by package.json `main`),
 * loaded as the Node worker loads it (a recorder stands in for `@azure/functions-core`), with the
 * app settings a deployment gives it. Every function must register and nothing may throw at load:
 * on Node 20+ one entry point that throws blocks every function of the app.
 *
 * Decision (docs/deploy.md, DESIGN "Start-up"): a misconfiguration fails at start, naming the setting,
 * and never per invocation: a consumer that threw per message would abandon each one until Service Bus
 * dead-letters it; an app that does not start consumes nothing, and messages wait in the queue.
 */

const ROOT = join(__dirname, '..', '..');
const LOADER = join(ROOT, 'test', 'support', 'workerLoader.js');

/** What the worker would index: name -> trigger type. */
const EXPECTED_FUNCTIONS = {
  paymentsConsumer: 'serviceBusTrigger',
  ordersConsumer: 'serviceBusTrigger',
  chargePayment: 'orchestrationTrigger',
  paymentCharge: 'entityTrigger',
  chargeProvider: 'activityTrigger',
  expiryTimer: 'timerTrigger',
  paymentsApi: 'httpTrigger',
  paymentStatus: 'httpTrigger',
  paymentProviderWebhook: 'httpTrigger',
};

interface LoadResult {
  functions: Array<{
    name: string;
    bindings: Record<string, { type: string; direction: string; queueName?: string; schedule?: string; connection?: string }>;
    hasCallback: boolean;
  }>;
  telemetry: Array<{ connectionString: string; credential: string | null; enableLiveMetrics: boolean }>;
  error: { file: string; name: string; message: string } | null;
  /** Paths of real Application Insights / Azure Monitor modules loaded (must stay empty: never start it in tests). */
  realTelemetryModules: string[];
}

/** The entry points package.json `main` names (a glob with `*` in the file name, as the worker resolves it). */
function entryPoints(): string[] {
  const main = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { main: string }).main;
  const dir = join(ROOT, dirname(main));
  const pattern = new RegExp(`^${basename(main).replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
  return readdirSync(dir)
    .filter((f) => pattern.test(f))
    .sort()
    .map((f) => join(dir, f));
}

/** Loads the built app in a fresh process whose environment is exactly `settings` (plus PATH). */
function loadApp(settings: Record<string, string>): LoadResult {
  const out = execFileSync(process.execPath, [LOADER, ...entryPoints()], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...settings },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = JSON.parse(out.trim().split('\n').pop()!) as LoadResult;
  // Every load, whatever its settings: the recorder stood in, the real SDK was never loaded (nor started).
  expect(result.realTelemetryModules).toEqual([]);
  return result;
}

function triggersOf(result: LoadResult): Record<string, string> {
  return Object.fromEntries(result.functions.map((f) => [f.name, Object.values(f.bindings).find((b) => /trigger$/i.test(b.type))?.type ?? 'none']));
}

beforeAll(() => {
  // What `npm run build` (and the remote build) produces: dist/src only.
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}, 180_000);

/** The deployed app settings (names from the compiled template, values from the parameters file, placeholders for Azure's). */
function deployedSettings(): Record<string, string> | undefined {
  const template = compiledMainTemplate();
  if (!template) return undefined;
  return new Deployment(
    template,
    azdParameters({ AZURE_ENV_NAME: 'dev', AZURE_LOCATION: 'swedencentral', AZURE_PRINCIPAL_ID: '', PAYMENT_PROVIDER_URL: 'https://provider.example.com' }),
  ).appSettings();
}

describe('deployment contract: the built app as the worker loads it', () => {
  test('package.json main matches the built entry points (registrations only)', () => {
    expect(entryPoints().map((f) => basename(f))).toEqual(['expiryTimer.js', 'http.js', 'ordersConsumer.js', 'payments.js']);
  });

  test('with the app settings the compiled template deploys: all 8 functions register, nothing throws, telemetry gets the identity', () => {
    const settings = deployedSettings();
    if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
    const result = loadApp(settings);
    expect(result.error).toBeNull();
    expect(triggersOf(result)).toEqual(EXPECTED_FUNCTIONS);
    expect(result.functions.every((f) => f.hasCallback)).toBe(true);
    const payments = result.functions.find((f) => f.name === 'paymentsConsumer')!;
    expect(Object.values(payments.bindings).find((b) => b.type === 'serviceBusTrigger')).toMatchObject({
      queueName: '%PAYMENTS_QUEUE_NAME%',
      connection: 'ServiceBusConnection',
    });
    // The HTTP functions: the payments API behind a function key, the webhook authenticated by its signature.
    const httpTrigger = (name: string) => Object.values(result.functions.find((f) => f.name === name)!.bindings).find((b) => b.type === 'httpTrigger');
    expect(httpTrigger('paymentsApi')).toMatchObject({ authLevel: 'function', route: 'payments', methods: ['POST'] });
    expect(httpTrigger('paymentProviderWebhook')).toMatchObject({ authLevel: 'anonymous', route: 'webhooks/payment-provider', methods: ['POST'] });
    // Application Insights: started once, with a managed identity credential (local auth is off on the component).
    expect(result.telemetry).toEqual([
      { connectionString: settings.APPLICATIONINSIGHTS_CONNECTION_STRING, credential: 'ManagedIdentityCredential', enableLiveMetrics: false },
    ]);
  });

  test('with local.settings.json.example: all 8 functions register and telemetry stays off', () => {
    const example = (JSON.parse(readFileSync(join(ROOT, 'local.settings.json.example'), 'utf8')) as { Values: Record<string, string> }).Values;
    const result = loadApp(example);
    expect(result.error).toBeNull();
    expect(triggersOf(result)).toEqual(EXPECTED_FUNCTIONS);
    expect(result.telemetry).toEqual([]);
  });

  test.each([
    ['PAYMENT_PROVIDER_URL', /PAYMENT_PROVIDER_URL/],
    ['COSMOS_ENDPOINT', /COSMOS_ENDPOINT/],
    ['IDEMPOTENCY_TABLE_ENDPOINT', /IDEMPOTENCY_TABLE_ENDPOINT/],
  ])('a deployment without %s fails at start, naming the setting (no function consumes anything)', (name, pattern) => {
    const settings = deployedSettings();
    if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
    const { [name]: _removed, ...rest } = settings;
    const result = loadApp(rest);
    expect(result.error).not.toBeNull();
    expect(result.error!.name).toBe('ConfigurationError');
    expect(result.error!.message).toMatch(pattern);
  });

  test('a malformed setting fails at start with its name and the rule it broke', () => {
    const settings = deployedSettings();
    if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
    const result = loadApp({ ...settings, IDEMPOTENCY_RETENTION_DAYS: '2' });
    expect(result.error?.message).toMatch(/IDEMPOTENCY_RETENTION_DAYS \(2 days\) is shorter than the redelivery window/);
  });
});
