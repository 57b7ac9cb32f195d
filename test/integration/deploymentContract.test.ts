import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { installedPackages, stageDeployedPackage, type StagedPackage } from '../../tools/deploy/deployedPackage';
import { azdParameters, compiledMainTemplate, Deployment } from '../support/compiledTemplate';

/**
 * The deployment contract: the app as a deployment runs it, not the development tree. The upload
 * (`.funcignore` applied), a fresh build of `src/`, and a production-only install (`npm ci --omit=dev`
 * from the lock file, cached by its hash), staged in a scratch folder by `tools/deploy/deployedPackage.ts`,
 * then loaded as the Node worker loads `main` (a recorder stands in for `@azure/functions-core`), with the
 * app settings a deployment gives it. Every function must register and nothing may throw at load:
 * on Node 20+ one entry point that throws blocks every function of the app.
 *
 * Decision (docs/deploy.md, DESIGN "Start-up"): a setting every function needs fails the start, naming it;
 * a setting only one feature needs stops that feature alone (see `featureSettings.test.ts`).
 */

const ROOT = join(__dirname, '..', '..');
const LOADER = join(ROOT, 'test', 'support', 'workerLoader.js');
let staged: StagedPackage;

/** What the worker would index: name -> trigger type. */
const EXPECTED_FUNCTIONS = {
  paymentsConsumer: 'serviceBusTrigger',
  ordersConsumer: 'serviceBusTrigger',
  chargePayment: 'orchestrationTrigger',
  paymentCharge: 'entityTrigger',
  chargeProvider: 'activityTrigger',
  completePaymentRecord: 'activityTrigger',
  expiryTimer: 'timerTrigger',
  ledgerCheck: 'timerTrigger',
  paymentsApi: 'httpTrigger',
  paymentStatus: 'httpTrigger',
  paymentProviderWebhook: 'httpTrigger',
  rewardsConsumer: 'eventHubTrigger',
};

interface LoadResult {
  functions: Array<{
    name: string;
    bindings: Record<string, { type: string; direction: string; queueName?: string; schedule?: string; connection?: string }>;
    hasCallback: boolean;
  }>;
  telemetry: Array<{ connectionString: string; credential: string | null; enableLiveMetrics: boolean }>;
  error: { file: string; name: string; message: string } | null;
  /** console.error / console.warn lines written while loading. */
  logs: Array<{ level: string; message: string }>;
  /** Paths of real Application Insights / Azure Monitor modules loaded (must stay empty: never start it in tests). */
  realTelemetryModules: string[];
}

/** The entry points the deployed package.json `main` names (a glob with `*` in the file name, as the worker resolves it). */
function entryPoints(): string[] {
  const main = (JSON.parse(readFileSync(join(staged.dir, 'package.json'), 'utf8')) as { main: string }).main;
  const dir = join(staged.dir, dirname(main));
  const pattern = new RegExp(`^${basename(main).replace(/[.]/g, '\\.').replace(/\*/g, '.*')}$`);
  return readdirSync(dir)
    .filter((f) => pattern.test(f))
    .sort()
    .map((f) => join(dir, f));
}

/** Loads the deployed app in a fresh process whose environment is exactly `settings` (plus PATH). */
function loadApp(settings: Record<string, string>): LoadResult {
  const out = execFileSync(process.execPath, [LOADER, ...entryPoints()], {
    cwd: staged.dir,
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
  // The first run for a lock file installs its production dependencies (about 30 s here); later runs reuse them.
  staged = stageDeployedPackage(ROOT, join(mkdtempSync(join(tmpdir(), 'deployed-app-')), 'site'));
}, 600_000);

afterAll(() => {
  if (staged) rmSync(dirname(staged.dir), { recursive: true, force: true });
});

/** The deployed app settings (names from the compiled template, values from the parameters file, placeholders for Azure's). */
function deployedSettings(): Record<string, string> | undefined {
  const template = compiledMainTemplate();
  if (!template) return undefined;
  return new Deployment(
    template,
    azdParameters({
      AZURE_ENV_NAME: 'dev',
      AZURE_LOCATION: 'swedencentral',
      AZURE_PRINCIPAL_ID: '',
      PAYMENT_PROVIDER_URL: 'https://provider.example.com',
      VNET_ENABLED: 'false',
    }),
  ).appSettings();
}

describe('deployment contract: what a deployment ships', () => {
  test('the upload holds the sources the remote build needs and no dist/, node_modules, tests, tools or local settings', () => {
    const upload = staged.upload;
    expect(upload).toEqual(
      expect.arrayContaining(['host.json', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src/functions/payments.ts']),
    );
    const forbidden = upload.filter((f) =>
      /^(dist|node_modules|test|tools|infra|docs|examples|coverage)\/|^local\.settings\.json|^\.|jest\.config|eslint\.config/.test(f),
    );
    expect(forbidden).toEqual([]);
    // Only what the app or its build reads: the sources (the app's and the core package's), host.json, package*.json
    // and the tsconfig files the build extends.
    expect(upload).toEqual(expect.arrayContaining(['packages/idempotency/src/index.ts', 'packages/idempotency/src/stores/table/TableIdempotencyStore.ts']));
    expect(upload.filter((f) => !f.startsWith('src/') && !f.startsWith('packages/idempotency/src/'))).toEqual([
      'host.json',
      'package-lock.json',
      'package.json',
      'packages/idempotency/bin/azure-functions-idempotency.js', // the console's bin: npm links it at install (issue 63)
      'packages/idempotency/package.json',
      'packages/idempotency/tsconfig.json',
      'tsconfig.build.json',
      'tsconfig.json',
    ]);
  });

  test('the installed dependencies are the production ones: no test tooling (jest, azurite, the Cosmos emulator, eslint, typescript)', () => {
    const packages = installedPackages(join(staged.dir, 'node_modules'));
    const dependencies = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
    expect(packages).toEqual(expect.arrayContaining(dependencies));
    const devTools = ['jest', 'azurite', '@vercel/cosmosdb-server', 'eslint', 'typescript', 'ts-jest', 'prettier', 'ignore'];
    expect(packages.filter((p) => devTools.includes(p))).toEqual([]);
  });

  test('every package the app imports is a dependency (a devDependency is missing from a production install)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const imported = new Set<string>();
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) walk(join(dir, entry.name));
        else if (entry.name.endsWith('.js'))
          for (const [, name] of readFileSync(join(dir, entry.name), 'utf8').matchAll(/require\("((?:@[^/"]+\/)?[^/".][^/"]*)/g)) imported.add(name);
      }
    };
    walk(join(staged.dir, 'dist'));
    const missing = [...imported].filter((name) => !name.startsWith('node:') && name !== '@azure/functions-core' && !(name in pkg.dependencies));
    expect(imported.size).toBeGreaterThan(5);
    expect(missing).toEqual([]);
  });
});

describe('deployment contract: the deployed app as the worker loads it', () => {
  test('package.json main matches the built entry points (registrations only)', () => {
    expect(entryPoints().map((f) => basename(f))).toEqual(['expiryTimer.js', 'http.js', 'ledgerCheck.js', 'ordersConsumer.js', 'payments.js', 'rewards.js']);
  });

  test('with the app settings the compiled template deploys: all 12 functions register, nothing throws, telemetry gets the identity', () => {
    const settings = deployedSettings();
    if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
    const result = loadApp(settings);
    expect(result.error).toBeNull();
    expect(result.logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(triggersOf(result)).toEqual(EXPECTED_FUNCTIONS);
    expect(result.functions.every((f) => f.hasCallback)).toBe(true);
    const payments = result.functions.find((f) => f.name === 'paymentsConsumer')!;
    expect(Object.values(payments.bindings).find((b) => b.type === 'serviceBusTrigger')).toMatchObject({
      queueName: '%PAYMENTS_QUEUE_NAME%',
      connection: 'ServiceBusConnection',
    });
    // The rewards consumer: batches of its hub and consumer group, through the identity-based EventHubConnection__* settings.
    const rewards = result.functions.find((f) => f.name === 'rewardsConsumer')!;
    expect(Object.values(rewards.bindings).find((b) => b.type === 'eventHubTrigger')).toMatchObject({
      eventHubName: '%REWARDS_EVENT_HUB_NAME%',
      consumerGroup: '%REWARDS_CONSUMER_GROUP%',
      connection: 'EventHubConnection',
      cardinality: 'many',
    });
    expect(settings.EventHubConnection__fullyQualifiedNamespace).toBeTruthy();
    // The HTTP functions: the payments API behind a function key, the webhook authenticated by its signature.
    const httpTrigger = (name: string) => Object.values(result.functions.find((f) => f.name === name)!.bindings).find((b) => b.type === 'httpTrigger');
    // Registered for every method: the app answers the ones it does not allow with 405 and Allow (the host would say 404).
    const every = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];
    expect(httpTrigger('paymentsApi')).toMatchObject({ authLevel: 'function', route: 'payments', methods: every });
    expect(httpTrigger('paymentProviderWebhook')).toMatchObject({ authLevel: 'anonymous', route: 'webhooks/payment-provider', methods: every });
    // Application Insights: started once, with a managed identity credential (local auth is off on the component).
    expect(result.telemetry).toEqual([
      { connectionString: settings.APPLICATIONINSIGHTS_CONNECTION_STRING, credential: 'ManagedIdentityCredential', enableLiveMetrics: false },
    ]);
  });

  test('with local.settings.json.example: all 12 functions register and telemetry stays off', () => {
    const example = (JSON.parse(readFileSync(join(ROOT, 'local.settings.json.example'), 'utf8')) as { Values: Record<string, string> }).Values;
    const result = loadApp(example);
    expect(result.error).toBeNull();
    expect(result.logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(triggersOf(result)).toEqual(EXPECTED_FUNCTIONS);
    expect(result.telemetry).toEqual([]);
  });

  test('a deployment without IDEMPOTENCY_TABLE_ENDPOINT (a setting every function needs) fails at start, naming it', () => {
    const settings = deployedSettings();
    if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
    const { IDEMPOTENCY_TABLE_ENDPOINT: _removed, ...rest } = settings;
    const result = loadApp(rest);
    expect(result.error?.name).toBe('ConfigurationError');
    expect(result.error?.message).toMatch(/IDEMPOTENCY_TABLE_ENDPOINT/);
  });

  test.each([
    // The ledger check lists the provider's charges: it needs the URL too (one error line each, both naming it).
    ['PAYMENT_PROVIDER_URL', undefined, ['paymentsConsumer', 'chargePayment', 'paymentCharge', 'chargeProvider', 'completePaymentRecord', 'ledgerCheck']],
    ['COSMOS_ENDPOINT', undefined, ['ordersConsumer']],
    ['COSMOS_ENDPOINT', 'not-a-url', ['ordersConsumer']],
    ['EXPIRY_SWEEP_BUDGET_SECONDS', '0', ['expiryTimer']],
    ['WEBHOOK_SIGNING_SECRET', 'too-short', []],
    ['HTTP_CALLER_IDENTITY', 'anyone', []],
    ['REWARDS_TABLE_NAME', 'no such table!', ['rewardsConsumer']],
    ['REWARDS_CONSUMER_GROUP', '-bad', ['rewardsConsumer']],
  ] as const)(
    'a deployment with %s = %s: that feature alone stops (%j not indexed; an HTTP one answers 503), one error line names the setting, the rest load',
    (name, value, missing) => {
      const settings = deployedSettings();
      if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
      const { [name]: _removed, ...rest } = settings;
      const result = loadApp(value === undefined ? rest : { ...rest, [name]: value });
      expect(result.error).toBeNull();
      const expected = Object.fromEntries(Object.entries(EXPECTED_FUNCTIONS).filter(([fn]) => !(missing as readonly string[]).includes(fn)));
      expect(triggersOf(result)).toEqual(expected);
      expect(result.logs).toHaveLength(name === 'PAYMENT_PROVIDER_URL' ? 2 : 1);
      for (const line of result.logs) expect(line).toMatchObject({ level: 'error', message: expect.stringContaining(name) });
    },
  );

  test('a malformed setting fails at start with its name and the rule it broke', () => {
    const settings = deployedSettings();
    if (!settings) return console.warn('NOT COMPILED: skipped (no Bicep CLI)');
    const result = loadApp({ ...settings, IDEMPOTENCY_RETENTION_DAYS: '2' });
    expect(result.error?.message).toMatch(/IDEMPOTENCY_RETENTION_DAYS \(2 days\) is shorter than the redelivery window/);
  });
});
