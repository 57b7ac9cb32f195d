import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SETTING_NAMES, loadSettings } from '../../src/config/settings';
import { REWARDS_FUNCTION } from '../../src/app/rewardsFunction';
import { DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS } from '../../src/lifecycle/retention';
import { objectBlockAfter, paramDefault, topLevelKeys } from '../support/bicepText';

/**
 * Cross-check of infra/ text against the code: names, defaults, files and comments the compiled ARM
 * JSON does not keep. What the compiled template can answer is tested in compiledTemplate.test.ts;
 * what only a real deployment proves (that Azure accepts the templates) is out of reach here.
 */

const root = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

const mainBicep = read('infra/main.bicep');
const apiBicep = read('infra/app/api.bicep');
const serviceBusBicep = read('infra/core/messaging/serviceBus.bicep');
const cosmosBicep = read('infra/core/database/cosmosServerless.bicep');
const localExample = JSON.parse(read('local.settings.json.example')) as { Values: Record<string, string> };
const hostJson = read('host.json');

/** Settings of SETTING_NAMES that must never be set in Azure (documented: secrets or local emulator only). */
const LOCAL_ONLY_SETTINGS: readonly string[] = [
  // Azurite connection string for local runs; Azure uses IDEMPOTENCY_TABLE_ENDPOINT with managed identity.
  'IDEMPOTENCY_TABLE_CONNECTION_STRING',
  // Key of the local Cosmos DB emulator; Azure uses COSMOS_ENDPOINT with the managed identity (local auth off).
  'COSMOS_KEY',
  // Service Bus emulator connection string for POST /api/payments locally; Azure uses SERVICEBUS_FULLY_QUALIFIED_NAMESPACE.
  'SERVICEBUS_CONNECTION_STRING',
];

/** App settings the Functions host or the platform reads (not the app code), as set in the Bicep. */
const AZURE_HOST_SETTINGS: readonly string[] = [
  'AzureWebJobsStorage__accountName',
  'AzureWebJobsStorage__blobServiceUri',
  'AzureWebJobsStorage__queueServiceUri',
  'AzureWebJobsStorage__tableServiceUri',
  'AzureWebJobsStorage__credential',
  'AzureWebJobsStorage__clientId',
  'ServiceBusConnection__fullyQualifiedNamespace',
  'ServiceBusConnection__credential',
  'ServiceBusConnection__clientId',
  'EventHubConnection__fullyQualifiedNamespace',
  'EventHubConnection__credential',
  'EventHubConnection__clientId',
  'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
  'DURABLE_TASK_HUB_NAME',
  // host.json's storageProvider.partitionCount, overridden per deployment (infra durablePartitionCount, issue 63).
  'AzureFunctionsJobHost__extensions__durableTask__storageProvider__partitionCount',
];

/**
 * The shard layout (docs/deploy.md section 11): which of `PAYMENT_SHARD_COUNT` shards an app is, read by
 * src/payments/shards.ts (in SETTING_NAMES as well); every app has both, the unsharded one 1 and 0.
 */
const SHARD_SETTINGS: readonly string[] = ['PAYMENT_SHARD_COUNT', 'PAYMENT_SHARD_INDEX'];

/**
 * Settings of SETTING_NAMES only a sharded deployment sets (`var shardMapSettings`, unioned when `shard.count` > 1): one
 * shard keeps today's settings. The map of every shard's table endpoint (src/config/shardTableEndpoints.ts).
 */
const SHARDED_ONLY_SETTINGS: readonly string[] = ['PAYMENT_SHARD_TABLE_ENDPOINTS'];

/** Host settings only the local example has (Flex Consumption rejects the first; the others are connections). */
const LOCAL_HOST_SETTINGS: readonly string[] = [
  'FUNCTIONS_WORKER_RUNTIME',
  'AzureWebJobsStorage',
  'AzureWebJobsFeatureFlags',
  'ServiceBusConnection',
  'EventHubConnection',
  'DURABLE_TASK_HUB_NAME',
];

/**
 * Built-in role definition ids, by role name, as Microsoft documents them (Azure built-in roles; the same
 * GUIDs are used by Azure-Samples functions quickstarts and are what `az role definition list` returns).
 */
const DOCUMENTED_ROLE_IDS = {
  'Azure Service Bus Data Owner': '090c5cfd-751d-490a-894a-3ce6f1109419',
  'Azure Service Bus Data Receiver': '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0',
  'Azure Service Bus Data Sender': '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39',
  'Storage Blob Data Owner': 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b',
  'Storage Queue Data Contributor': '974c5e8b-45b9-4653-ba55-5f855dd0fb88',
  'Storage Table Data Contributor': '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3',
  'Monitoring Metrics Publisher': '3913510d-42f4-4e42-8a64-420c390055eb',
  // Cosmos DB data-plane role (a Cosmos SQL role definition, same id in every account).
  'Cosmos DB Built-in Data Contributor': '00000000-0000-0000-0000-000000000002',
  'Key Vault Secrets User': '4633458b-17de-408a-b874-0445c86b69e6',
  'Azure Event Hubs Data Receiver': 'a638d3c7-ab3a-418d-83e6-5f17a39d4fde',
  'Azure Event Hubs Data Sender': '2b629674-e913-4c01-ae53-ef4638d8f975',
} as const;

/** The keys of `var commonSettings = { ... }` in a Bicep text: the app settings every shard's app has. */
function appSettingNames(bicep: string): string[] {
  return topLevelKeys(objectBlockAfter(bicep, /var\s+commonSettings\s*=\s*\{/));
}

/** Names in `expected` that `bicep`'s app settings do not set. */
function missingAppSettings(bicep: string, expected: readonly string[]): string[] {
  const set = new Set(appSettingNames(bicep));
  return expected.filter((name) => !set.has(name));
}

/** Every file under infra/, relative to the repository root. */
function infraFiles(dir = join(root, 'infra')): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? infraFiles(path) : [relative(root, path)];
  });
}

const azureSettings = SETTING_NAMES.filter((name) => !LOCAL_ONLY_SETTINGS.includes(name) && !SHARDED_ONLY_SETTINGS.includes(name));

describe('infra cross-check: app settings', () => {
  test('every setting the code reads (except the local-only list) is set in the Function App app settings', () => {
    expect(missingAppSettings(apiBicep, azureSettings)).toEqual([]);
  });

  test('the check fails when a setting is removed from the Bicep', () => {
    const withoutLease = apiBicep.replace(/^\s*IDEMPOTENCY_LEASE_SECONDS:.*$/m, '');
    expect(withoutLease).not.toBe(apiBicep);
    expect(missingAppSettings(withoutLease, azureSettings)).toEqual(['IDEMPOTENCY_LEASE_SECONDS']);
    const commentedOut = apiBicep.replace(/^(\s*)(COSMOS_ENDPOINT:.*)$/m, '$1// $2');
    expect(missingAppSettings(commentedOut, azureSettings)).toEqual(['COSMOS_ENDPOINT']);
  });

  test('local-only settings are never set in Azure', () => {
    for (const name of LOCAL_ONLY_SETTINGS) expect(SETTING_NAMES).toContain(name);
    expect(appSettingNames(apiBicep).filter((name) => LOCAL_ONLY_SETTINGS.includes(name))).toEqual([]);
  });

  test('every app setting in the Bicep is read by the code (SETTING_NAMES) or is a known host setting', () => {
    const known = new Set<string>([...SETTING_NAMES, ...AZURE_HOST_SETTINGS, ...SHARD_SETTINGS]);
    expect(appSettingNames(apiBicep).filter((name) => !known.has(name))).toEqual([]);
    expect(missingAppSettings(apiBicep, AZURE_HOST_SETTINGS)).toEqual([]);
  });

  test('every app has its shard (count and index); shards past the first have the rewards consumer switched off, nothing else', () => {
    expect(missingAppSettings(apiBicep, SHARD_SETTINGS)).toEqual([]);
    expect(apiBicep).toMatch(/PAYMENT_SHARD_COUNT: string\(shard\.count\)\s+PAYMENT_SHARD_INDEX: string\(shard\.index\)/);
    expect(apiBicep).toMatch(
      /var appSettings = union\(commonSettings, shard\.count == 1 \? \{\} : shardMapSettings, shard\.index == 0 \? \{\} : shardOnlySettings\)/,
    );
    const shardOnly = objectBlockAfter(apiBicep, /var\s+shardOnlySettings\s*=\s*\{/);
    // The Functions host's per-function switch names the function as registered (src/app/rewardsFunction.ts).
    expect(shardOnly.replace(/\s+/g, ' ')).toBe(`{ 'AzureWebJobs.${REWARDS_FUNCTION}.Disabled': 'true' }`);
    // More than one shard: the map, and nothing else; every name in it is read by the code.
    const shardMap = objectBlockAfter(apiBicep, /var\s+shardMapSettings\s*=\s*\{/);
    expect(topLevelKeys(shardMap)).toEqual(SHARDED_ONLY_SETTINGS);
    for (const name of SHARDED_ONLY_SETTINGS) expect(SETTING_NAMES).toContain(name);
  });

  test('every setting the code reads is listed in local.settings.json.example, and nothing unknown is', () => {
    const values = Object.keys(localExample.Values);
    expect(SETTING_NAMES.filter((name) => !values.includes(name))).toEqual([]);
    const known = new Set<string>([...SETTING_NAMES, ...LOCAL_HOST_SETTINGS]);
    expect(values.filter((name) => !known.has(name))).toEqual([]);
  });

  test('identity-based connections in Azure have the same connection names as the local example', () => {
    const prefixes = new Set(
      appSettingNames(apiBicep)
        .filter((n) => n.includes('__') && !n.startsWith('AzureFunctionsJobHost__')) // a host.json override, not a connection
        .map((n) => n.split('__')[0]),
    );
    expect([...prefixes].sort()).toEqual(['AzureWebJobsStorage', 'EventHubConnection', 'ServiceBusConnection']);
    for (const prefix of prefixes) expect(Object.keys(localExample.Values)).toContain(prefix);
    expect(apiBicep).toMatch(/AzureWebJobsStorage__credential: 'managedidentity'/);
    expect(apiBicep).toMatch(/ServiceBusConnection__credential: 'managedidentity'/);
    expect(apiBicep).toMatch(/EventHubConnection__credential: 'managedidentity'/);
    expect(apiBicep).toMatch(/APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=\$\{identityClientId\};Authorization=AAD'/);
  });

  test("host.json's %...% references are set in the Bicep and in the local example", () => {
    const refs = [...hostJson.matchAll(/%([A-Za-z0-9_]+)%/g)].map((m) => m[1]);
    expect(refs).toContain('DURABLE_TASK_HUB_NAME');
    expect(missingAppSettings(apiBicep, refs)).toEqual([]);
    for (const ref of refs) expect(Object.keys(localExample.Values)).toContain(ref);
  });

  test('Flex Consumption: FC1 plan, Node 22 runtime, and no FUNCTIONS_WORKER_RUNTIME / FUNCTIONS_EXTENSION_VERSION setting', () => {
    expect(read('infra/core/host/flexConsumptionPlan.bicep')).toMatch(/name: 'FC1'[\s\S]*tier: 'FlexConsumption'/);
    expect(apiBicep).toMatch(/runtime: \{\s*name: 'node'\s*version: runtimeVersion/);
    expect(mainBicep).toMatch(/runtimeVersion: '22'/);
    expect(appSettingNames(apiBicep)).not.toContain('FUNCTIONS_WORKER_RUNTIME');
    expect(appSettingNames(apiBicep)).not.toContain('FUNCTIONS_EXTENSION_VERSION');
  });
});

describe('infra cross-check: queues and the retention rule', () => {
  const defaults = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });

  test('queue names in the Bicep agree with the defaults of PAYMENTS_QUEUE_NAME / ORDERS_QUEUE_NAME', () => {
    expect(paramDefault(mainBicep, 'paymentsQueueName')).toBe(defaults.PAYMENTS_QUEUE_NAME);
    expect(paramDefault(mainBicep, 'ordersQueueName')).toBe(defaults.ORDERS_QUEUE_NAME);
    // Every shard's payments queue, then orders: paymentsQueueName itself with one shard, paymentsQueueName-<i> with more.
    expect(mainBicep).toMatch(/paymentsQueue: shardCount == 1 \? paymentsQueueName : '\$\{paymentsQueueName\}-\$\{i\}'/);
    expect(mainBicep).toMatch(/var paymentsQueueNames = \[for shard in shards: shard\.paymentsQueue\]/);
    expect(mainBicep).toMatch(/var queueNames = concat\(paymentsQueueNames, \[ordersQueueName\]\)/);
    expect(mainBicep.match(/queueNames: queueNames/g)).toHaveLength(2);
    expect(mainBicep).toMatch(/paymentsQueueName: shard\.paymentsQueue/);
    expect(mainBicep).toMatch(/ordersQueueName: ordersQueueName/);
    expect(apiBicep).toMatch(/PAYMENTS_QUEUE_NAME: serviceBus\.paymentsQueueName/);
    expect(apiBicep).toMatch(/ORDERS_QUEUE_NAME: serviceBus\.ordersQueueName/);
  });

  test('queues: duplicate detection with an explicit window, lock, delivery count, TTL, dead-lettering on expiry', () => {
    expect(serviceBusBicep).toMatch(/requiresDuplicateDetection: true/);
    expect(serviceBusBicep).toMatch(/duplicateDetectionHistoryTimeWindow: duplicateDetectionHistoryTimeWindow/);
    expect(paramDefault(mainBicep, 'duplicateDetectionHistoryTimeWindow')).toBe('PT10M');
    expect(serviceBusBicep).toMatch(/lockDuration: 'PT\$\{lockDurationSeconds\}S'/);
    expect(serviceBusBicep).toMatch(/maxDeliveryCount: maxDeliveryCount/);
    expect(serviceBusBicep).toMatch(/deadLetteringOnMessageExpiration: true/);
    expect(serviceBusBicep).toMatch(/defaultMessageTimeToLive: 'P\$\{messageTtlDays\}D'/);
  });

  test('the queue and the app settings get the same lock, delivery count and TTL parameters', () => {
    expect(mainBicep).toMatch(
      /lockDurationSeconds: lockDurationSeconds\s+maxDeliveryCount: maxDeliveryCount\s+messageTtlDays: messageTtlDays\s+duplicateDetectionHistoryTimeWindow/,
    );
    expect(mainBicep).toMatch(
      /serviceBus: \{\s*lockDurationSeconds: lockDurationSeconds\s*maxDeliveryCount: maxDeliveryCount\s*messageTtlDays: messageTtlDays/,
    );
    expect(apiBicep).toMatch(/SERVICEBUS_LOCK_DURATION_SECONDS: string\(serviceBus\.lockDurationSeconds\)/);
    expect(apiBicep).toMatch(/SERVICEBUS_MAX_DELIVERY_COUNT: string\(serviceBus\.maxDeliveryCount\)/);
    expect(apiBicep).toMatch(/SERVICEBUS_MESSAGE_TTL_SECONDS: string\(serviceBus\.messageTtlDays \* 86400\)/);
  });

  test('Bicep defaults equal the code defaults (the retention rule itself is tested on the compiled template)', () => {
    const num = (name: string): number => Number(paramDefault(mainBicep, name));
    expect([
      num('lockDurationSeconds'),
      num('maxDeliveryCount'),
      num('messageTtlDays') * 86_400,
      num('dlqResubmitMarginDays'),
      num('idempotencyRetentionDays'),
    ]).toEqual([
      defaults.SERVICEBUS_LOCK_DURATION_SECONDS,
      defaults.SERVICEBUS_MAX_DELIVERY_COUNT,
      defaults.SERVICEBUS_MESSAGE_TTL_SECONDS,
      defaults.DLQ_RESUBMIT_MARGIN_DAYS,
      defaults.IDEMPOTENCY_RETENTION_DAYS,
    ]);
  });

  test('the lock auto-renewal of host.json, the code and the Bicep parameter are one number', () => {
    const host = JSON.parse(hostJson) as { extensions: { serviceBus: { maxAutoLockRenewalDuration: string } } };
    const [h, m, sec] = host.extensions.serviceBus.maxAutoLockRenewalDuration.split(':').map(Number);
    const hostMs = ((h * 60 + m) * 60 + sec) * 1000;
    expect(hostMs).toBe(DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS);
    expect(Number(paramDefault(mainBicep, 'maxAutoLockRenewalSeconds')) * 1000).toBe(DEFAULT_MAX_AUTO_LOCK_RENEWAL_MS);
  });
});

describe('infra cross-check: no secrets, local auth off, documented roles', () => {
  const files = infraFiles();

  test.each([
    ['an account key', /AccountKey/i],
    ['a SAS key', /SharedAccessKey/i],
    ['listKeys(', /listKeys\s*\(/i],
    ['listConnectionStrings(', /listConnectionStrings\s*\(/i],
    ['a storage connection string', /DefaultEndpointsProtocol=/i],
    ['a Service Bus connection string', /Endpoint=sb:\/\//i],
    ['an instrumentation key', /InstrumentationKey/i],
    ['the storage emulator', /UseDevelopmentStorage/i],
  ])('no file under infra/ contains %s', (_what, pattern) => {
    expect(files.length).toBeGreaterThan(10);
    expect(files.filter((file) => pattern.test(read(file)))).toEqual([]);
  });

  test('no app setting carries a connection string except the Application Insights one (no secret once local auth is off)', () => {
    const names = appSettingNames(apiBicep);
    expect(names.filter((n) => /connection_?string/i.test(n))).toEqual(['APPLICATIONINSIGHTS_CONNECTION_STRING']);
    expect(names).not.toContain('AzureWebJobsStorage');
    expect(names).not.toContain('ServiceBusConnection');
  });

  test('shared keys and local auth are disabled everywhere', () => {
    expect(read('infra/core/storage/storageAccount.bicep')).toMatch(/allowSharedKeyAccess: false/);
    expect(serviceBusBicep).toMatch(/disableLocalAuth: true/);
    expect(read('infra/core/messaging/eventHubs.bicep')).toMatch(/disableLocalAuth: true\s+minimumTlsVersion: '1.2'/);
    expect(cosmosBicep).toMatch(/disableLocalAuth: true/);
    expect(read('infra/core/monitor/monitoring.bicep')).toMatch(/DisableLocalAuth: true/);
  });

  test('role definition ids in infra/ are the documented GUIDs, with the documented names', () => {
    const documented = new Set<string>(Object.values(DOCUMENTED_ROLE_IDS));
    const used = new Set(files.flatMap((file) => read(file).match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi) ?? []));
    expect([...used].filter((id) => !documented.has(id.toLowerCase()))).toEqual([]);
    // Every id in main.bicep's role map sits next to a comment naming the role it is documented as.
    const roleLines = mainBicep.match(/^\s*\w+: '[0-9a-f-]{36}' \/\/ .+$/gm) ?? [];
    expect(roleLines.length).toBe(9);
    for (const line of roleLines) {
      const [, id, name] = /'([0-9a-f-]{36})' \/\/ (.+)$/.exec(line)!;
      expect(DOCUMENTED_ROLE_IDS[name.trim() as keyof typeof DOCUMENTED_ROLE_IDS]).toBe(id);
    }
    expect(cosmosBicep).toContain(`'${DOCUMENTED_ROLE_IDS['Cosmos DB Built-in Data Contributor']}'`);
  });

  test('the app identity gets exactly the data roles it needs, through one looped module', () => {
    const appRoles = [...mainBicep.matchAll(/\{ principal: 'app', target: '(\w+)', targetName: (?:[\w.]+|'[^']+'), roleDefinitionId: roles\.(\w+) \}/g)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    expect(appRoles.sort()).toEqual([
      'appInsights:monitoringMetricsPublisher',
      'eventHub:eventHubsDataReceiver',
      'keyVault:keyVaultSecretsUser',
      'serviceBusQueue:serviceBusDataOwner',
      'serviceBusQueue:serviceBusDataOwner',
      'storage:storageBlobDataOwner',
      'storage:storageQueueDataContributor',
      'storage:storageTableDataContributor',
    ]);
    expect(mainBicep).toMatch(/module roleAssignment 'core\/security\/roleAssignment\.bicep' = \[\s*for \(assignment, i\) in roleAssignments/);
    const withRoleResources = files.filter((file) => read(file).includes("'Microsoft.Authorization/roleAssignments@"));
    expect(withRoleResources).toEqual([join('infra', 'core', 'security', 'roleAssignment.bicep')]);
    expect(read('infra/core/security/roleAssignment.bicep').match(/name: guid\(\w+\.id, principalId, roleDefinitionId\)/g)).toHaveLength(6);
    expect(cosmosBicep).toMatch(/sqlRoleAssignments@[\d-]+' = \{[\s\S]*principalId: dataContributorPrincipalId/);
  });

  test('Cosmos DB: serverless, database shop, container orders on /orderId with TTL on (defaultTtl -1)', () => {
    const defaults = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
    expect(cosmosBicep).toMatch(/name: 'EnableServerless'/);
    expect(cosmosBicep).toMatch(/paths: \[\s*'\/orderId'\s*\]/);
    expect(cosmosBicep).toMatch(/defaultTtl: -1/);
    expect(paramDefault(mainBicep, 'cosmosDatabaseName')).toBe(defaults.COSMOS_DATABASE_NAME);
    expect(paramDefault(mainBicep, 'cosmosOrdersContainerName')).toBe(defaults.COSMOS_ORDERS_CONTAINER);
    expect(paramDefault(mainBicep, 'idempotencyTableName')).toBe(defaults.IDEMPOTENCY_TABLE_NAME);
  });
});

describe('host.json: what reaches Application Insights', () => {
  const host = JSON.parse(hostJson) as {
    logging: { logLevel: Record<string, string>; applicationInsights: { samplingSettings: { excludedTypes: string } } };
  };
  const rank = ['Trace', 'Debug', 'Information', 'Warning', 'Error', 'Critical', 'None'];

  test('failed invocations are logged (Host.Results at Error or below: the host logs a failed execution at Error, a success at Information)', () => {
    expect(rank.indexOf(host.logging.logLevel['Host.Results'] ?? host.logging.logLevel.default)).toBeLessThanOrEqual(rank.indexOf('Error'));
  });

  test("the host's chatty categories stay at Warning: the Durable tracking records (Function.<name>.User), Executing/Executed, the storage client's request logs (issue 37: 165 records, 157 KB a payment at Information)", () => {
    for (const category of ['Function', 'Azure.Core', 'default']) {
      expect(rank.indexOf(host.logging.logLevel[category] ?? host.logging.logLevel.default)).toBeGreaterThanOrEqual(rank.indexOf('Warning'));
    }
  });

  test('the Durable Task framework logs warnings and above only (Information is costly at volume)', () => {
    for (const category of ['DurableTask.AzureStorage', 'DurableTask.Core']) {
      expect(rank.indexOf(host.logging.logLevel[category] ?? host.logging.logLevel.default)).toBeGreaterThanOrEqual(rank.indexOf('Warning'));
    }
  });

  test('sampling exclusions name only the telemetry types the host knows', () => {
    const known = ['Dependency', 'Event', 'Exception', 'PageView', 'Request', 'Trace'];
    const excluded = host.logging.applicationInsights.samplingSettings.excludedTypes.split(';').filter(Boolean);
    expect(excluded.filter((t) => !known.includes(t))).toEqual([]);
    expect(excluded).toEqual(expect.arrayContaining(['Request', 'Exception']));
  });
});

describe('infra cross-check: operations and azd', () => {
  test('every KQL file the Bicep loads exists, and every KQL file is deployed', () => {
    const operations = read('infra/app/operations.bicep');
    const loaded = [...operations.matchAll(/loadTextContent\('\.\.\/monitoring\/queries\/([\w-]+\.kql)'\)/g)].map((m) => m[1]);
    const onDisk = readdirSync(join(root, 'infra', 'monitoring', 'queries')).filter((f) => f.endsWith('.kql'));
    expect(loaded.sort()).toEqual(onDisk.sort());
  });

  test('queries use the metric names the code emits', () => {
    const kql = readdirSync(join(root, 'infra', 'monitoring', 'queries'))
      .map((f) => read(`infra/monitoring/queries/${f}`))
      .join('\n');
    const metrics = [...kql.matchAll(/'((?:idempotency|payments|messages)\.[\w.]+)'/g)].map((m) => m[1]);
    const emitted = [
      'idempotency.claims',
      'idempotency.duplicates',
      'idempotency.key_reuse',
      'idempotency.in_progress',
      'idempotency.takeovers',
      'idempotency.purge.deleted',
      'idempotency.purge.scanned',
      'idempotency.purge.skipped',
      'idempotency.purge.held_extended',
      'payments.provider.latency',
      'payments.failed',
      'payments.held',
      'payments.provider.lookup_unsupported',
      'payments.provider.refused',
      'payments.charged_after_settle',
      'messages.store_outage.waits',
      'payments.reconciled',
      'payments.run_stuck',
      'payments.reconciler.incomplete',
      'payments.record_write_refused',
      'payments.in_progress.oldest_minutes',
      'payments.shard_layout_refused',
      'payments.ledger.discrepancies',
      'messages.parked',
      'messages.batch_failures',
      'messages.store_misconfigured',
    ];
    expect([...new Set(metrics)].filter((m) => !emitted.includes(m))).toEqual([]);
    expect(emitted.filter((m) => !metrics.includes(m))).toEqual([]);
  });

  test('azure.yaml deploys the repository root as the function service "api", which the Bicep tags', () => {
    const azureYaml = read('azure.yaml');
    expect(azureYaml).toMatch(/services:\s*\n\s+api:\s*\n\s+project: \.\s*\n\s+language: ts\s*\n\s+host: function/);
    expect(read('infra/app/api.bicep')).toMatch(/param serviceName string = 'api'/);
    expect(read('infra/app/api.bicep')).toMatch(/'azd-service-name': serviceName/);
    expect(azureYaml).toMatch(/remoteBuild: true/);
    expect(JSON.parse(read('infra/main.parameters.json')).parameters).toEqual({
      environmentName: { value: '${AZURE_ENV_NAME}' },
      location: { value: '${AZURE_LOCATION}' },
      principalId: { value: '${AZURE_PRINCIPAL_ID}' },
      principalType: { value: '${AZURE_PRINCIPAL_TYPE=User}' },
      paymentProviderUrl: { value: '${PAYMENT_PROVIDER_URL}' },
      keyVaultPurgeProtection: { value: '${KEY_VAULT_PURGE_PROTECTION=false}' },
      keyVaultCreateMode: { value: '${KEY_VAULT_CREATE_MODE=default}' },
      instanceMemoryMB: { value: '${INSTANCE_MEMORY_MB=2048}' },
      vnetEnabled: { value: '${VNET_ENABLED}' }, // no default: azd asks (test/unit/networkChoice.test.ts)
      zoneRedundant: { value: '${ZONE_REDUNDANT=false}' },
      shardCount: { value: '${SHARD_COUNT=1}' },
      serviceBusSku: { value: '${SERVICE_BUS_SKU=Standard}' },
      serviceBusMessagingUnits: { value: '${SERVICE_BUS_MESSAGING_UNITS=1}' },
      durablePartitionCount: { value: '${DURABLE_PARTITION_COUNT=4}' },
    });
  });
});
