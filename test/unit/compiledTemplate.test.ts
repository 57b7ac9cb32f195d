import { loadSettings, SETTING_NAMES } from '../../src/config/settings';
import { redeliveryWindow } from '../../src/lifecycle/retention';
import { resourcesOf } from '../support/armExpressions';
import { azdParameters, compiledMainTemplate, describeCompiled, Deployment } from '../support/compiledTemplate';

/**
 * Tests on infra/main.bicep as the real Bicep CLI compiles it (ARM JSON), evaluated for the parameters
 * azd passes: what the Function App gets, which queues, roles and scopes, and what the outputs expose.
 */

/** The azd environment of a default `azd up` (values azd or the user supplies). */
const AZD_ENV = {
  AZURE_ENV_NAME: 'dev',
  AZURE_LOCATION: 'swedencentral',
  AZURE_PRINCIPAL_ID: '22222222-2222-2222-2222-222222222222',
  PAYMENT_PROVIDER_URL: 'https://provider.example.com',
  VNET_ENABLED: 'false', // azd asks for it (no default): the deployer's answer
};

/** Settings the code reads that are never deployed (local emulators only; see docs/deploy.md). */
const LOCAL_ONLY = ['IDEMPOTENCY_TABLE_CONNECTION_STRING', 'COSMOS_KEY', 'SERVICEBUS_CONNECTION_STRING'];
/** Settings only a deployment of more than one shard sets (one shard: today's settings). */
const SHARDED_ONLY = ['PAYMENT_SHARD_TABLE_ENDPOINTS'];

describeCompiled('compiled infra/main.bicep: parameters', () => {
  const template = () => compiledMainTemplate()!;

  test('no parameter the app needs has an empty default; optional ones are only those that switch a feature off', () => {
    const emptyDefaults = Object.entries(template().parameters ?? {})
      .filter(([, p]) => p.defaultValue === '')
      .map(([name]) => name);
    // principalId: no deployer role; resourceGroupName: derived name; alertActionGroupId: alerts without an action group;
    // webhookSigningSecret (secure): the vault entry is set by hand instead (until then the webhook answers 503).
    expect(emptyDefaults.sort()).toEqual(['alertActionGroupId', 'principalId', 'resourceGroupName', 'webhookSigningSecret']);
    expect(template().parameters!.paymentProviderUrl.defaultValue).toBeUndefined();
    expect(template().parameters!.paymentProviderUrl.minLength).toBe(1);
  });

  test('every required parameter is mapped for azd in main.parameters.json', () => {
    const required = Object.entries(template().parameters ?? {})
      .filter(([, p]) => p.defaultValue === undefined)
      .map(([name]) => name);
    const mapped = azdParameters(AZD_ENV);
    expect(required.filter((name) => !(name in mapped))).toEqual([]);
    // vnetEnabled: no default, azd asks the deployer (issue 63, test/unit/networkChoice.test.ts).
    expect(required.sort()).toEqual(['environmentName', 'location', 'paymentProviderUrl', 'vnetEnabled']);
  });

  // azd substitutes AZURE_PRINCIPAL_TYPE itself with the signed-in principal's type, whatever the environment holds
  // (azure-dev pkg/infra/provisioning/bicep/bicep_provider.go evalParamEnvSubst): no step for the user.
  test('principalType is the ${AZURE_PRINCIPAL_TYPE} azd fills from the signed-in principal (User as the fallback)', () => {
    expect(azdParameters(AZD_ENV).principalType).toBe('User');
    expect(azdParameters({ ...AZD_ENV, AZURE_PRINCIPAL_TYPE: 'ServicePrincipal' }).principalType).toBe('ServicePrincipal');
    expect(template().parameters!.principalType.allowedValues).toEqual(['User', 'ServicePrincipal']);
  });

  test('a deployment without PAYMENT_PROVIDER_URL cannot be evaluated (required, no silent empty value)', () => {
    const { paymentProviderUrl: _omitted, ...rest } = azdParameters(AZD_ENV);
    expect(() => new Deployment(template(), rest).appSettings()).toThrow(/required parameter paymentProviderUrl/);
  });
});

describeCompiled('compiled infra/main.bicep: the Function App', () => {
  const deployment = () => new Deployment(compiledMainTemplate()!, azdParameters(AZD_ENV));

  test('every setting the code reads, except the local-only ones, is an app setting of the Function App', () => {
    const settings = deployment().appSettings();
    const expected = SETTING_NAMES.filter((name) => !LOCAL_ONLY.includes(name) && !SHARDED_ONLY.includes(name));
    expect(expected.filter((name) => !(name in settings))).toEqual([]);
    expect(LOCAL_ONLY.filter((name) => name in settings)).toEqual([]);
    expect(SHARDED_ONLY.filter((name) => name in settings)).toEqual([]);
  });

  test('the provider URL is the parameter azd passes, and Application Insights ingestion uses the identity (Entra)', () => {
    const settings = deployment().appSettings();
    expect(settings.PAYMENT_PROVIDER_URL).toBe(AZD_ENV.PAYMENT_PROVIDER_URL);
    const clientId = settings.AZURE_CLIENT_ID;
    expect(clientId).toBeTruthy();
    expect(settings.APPLICATIONINSIGHTS_AUTHENTICATION_STRING).toBe(`ClientId=${clientId};Authorization=AAD`);
  });

  test('the delivery settings the app reads are the values its queues are deployed with', () => {
    const d = deployment();
    const settings = d.appSettings();
    const queues = queueProperties(d);
    for (const q of queues) {
      expect(q.lockDuration).toBe(`PT${settings.SERVICEBUS_LOCK_DURATION_SECONDS}S`);
      expect(String(q.maxDeliveryCount)).toBe(settings.SERVICEBUS_MAX_DELIVERY_COUNT);
      expect(q.defaultMessageTimeToLive).toBe(`P${Number(settings.SERVICEBUS_MESSAGE_TTL_SECONDS) / 86_400}D`);
    }
  });

  test('Flex Consumption: Node 22, one always-ready instance for the durable group', () => {
    const site = deployment()
      .moduleWith('Microsoft.Web/sites')
      .resources()
      .find((r) => r.type === 'Microsoft.Web/sites')!;
    const config = site.properties.functionAppConfig as { runtime: unknown; scaleAndConcurrency: { alwaysReady: unknown } };
    expect(config.runtime).toEqual({ name: 'node', version: '22' });
    expect(config.scaleAndConcurrency.alwaysReady).toEqual([{ name: 'durable', instanceCount: 1 }]);
  });

  test('instance memory: 2048 MB by default, 512 with INSTANCE_MEMORY_MB=512; only the sizes Flex offers are allowed', () => {
    const memoryOf = (env: Record<string, string>) =>
      (
        new Deployment(compiledMainTemplate()!, azdParameters(env))
          .moduleWith('Microsoft.Web/sites')
          .resources()
          .find((r) => r.type === 'Microsoft.Web/sites')!.properties.functionAppConfig as { scaleAndConcurrency: { instanceMemoryMB: unknown } }
      ).scaleAndConcurrency.instanceMemoryMB;
    expect(memoryOf(AZD_ENV)).toBe(2048);
    expect(memoryOf({ ...AZD_ENV, INSTANCE_MEMORY_MB: '512' })).toBe(512);
    expect(memoryOf({ ...AZD_ENV, INSTANCE_MEMORY_MB: '4096' })).toBe(4096);
    // ARM refuses a value outside allowedValues before deploying anything: the main template and the api module both list them.
    const main = compiledMainTemplate()!.parameters!.instanceMemoryMB;
    expect(main).toMatchObject({ type: 'int', defaultValue: 2048, allowedValues: [512, 2048, 4096] });
    const apiModule = new Deployment(compiledMainTemplate()!, azdParameters(AZD_ENV)).moduleWith('Microsoft.Web/sites');
    expect(apiModule.template.parameters!.instanceMemoryMB.allowedValues).toEqual([512, 2048, 4096]);
    for (const refused of [1024, 256, 8192]) expect(main.allowedValues).not.toContain(refused);
  });
});

describeCompiled('compiled infra/main.bicep: queues, roles, local auth, outputs', () => {
  const deployment = () => new Deployment(compiledMainTemplate()!, azdParameters(AZD_ENV));

  test('queues payments and orders: duplicate detection, lock, deliveries, TTL, dead-lettering on expiry', () => {
    const queues = queueProperties(deployment());
    expect(queues.map((q) => q.name).sort()).toEqual(['payments', 'orders'].sort());
    for (const q of queues) {
      expect(q).toMatchObject({
        requiresDuplicateDetection: true,
        duplicateDetectionHistoryTimeWindow: 'PT10M',
        lockDuration: 'PT60S',
        maxDeliveryCount: 10,
        deadLetteringOnMessageExpiration: true,
        requiresSession: false,
      });
    }
  });

  test('role assignments: the app identity gets its data roles on the right resources; the deployer may send', () => {
    const d = deployment();
    const assignments = d.modulesWith('Microsoft.Authorization/roleAssignments').map((m) => {
      const p = m.evaluator;
      return {
        target: p.parameter('target'),
        role: p.parameter('roleDefinitionId'),
        principal: p.parameter('principalId') === AZD_ENV.AZURE_PRINCIPAL_ID ? 'deployer' : 'app',
        principalType: p.parameter('principalType'),
        // The assignment resource that the module's condition keeps, and its scope.
        scopes: m
          .resources()
          .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
          .map((r) => String((r as unknown as { scope?: unknown }).scope ?? '')),
      };
    });
    expect(assignments.map(({ target, role, principal, principalType }) => ({ target, role, principal, principalType }))).toEqual([
      // Data Owner on each trigger queue (not the namespace): target-based scaling reads the queue length.
      { target: 'serviceBusQueue', role: '090c5cfd-751d-490a-894a-3ce6f1109419', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'serviceBusQueue', role: '090c5cfd-751d-490a-894a-3ce6f1109419', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'keyVault', role: '4633458b-17de-408a-b874-0445c86b69e6', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'storage', role: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'storage', role: '974c5e8b-45b9-4653-ba55-5f855dd0fb88', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'storage', role: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'appInsights', role: '3913510d-42f4-4e42-8a64-420c390055eb', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'serviceBus', role: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39', principal: 'deployer', principalType: 'User' },
      // The rewards hub (not the namespace): the app receives, the deployer may send (producer CLI).
      { target: 'eventHub', role: 'a638d3c7-ab3a-418d-83e6-5f17a39d4fde', principal: 'app', principalType: 'ServicePrincipal' },
      { target: 'eventHub', role: '2b629674-e913-4c01-ae53-ef4638d8f975', principal: 'deployer', principalType: 'User' },
    ]);
    for (const a of assignments) expect(a.scopes).toHaveLength(1);
    // Scope of each assignment: the one resource of its target, never the resource group.
    const scopeTypes = d.modulesWith('Microsoft.Authorization/roleAssignments').map((m) =>
      m
        .resources()
        .filter((r) => r.type === 'Microsoft.Authorization/roleAssignments')
        .map((r) => String(r.scope)),
    );
    for (const [i, scopes] of scopeTypes.entries()) {
      const expected = {
        serviceBus: 'Microsoft.ServiceBus/namespaces',
        serviceBusQueue: 'Microsoft.ServiceBus/namespaces/queues',
        storage: 'Microsoft.Storage/storageAccounts',
        appInsights: 'Microsoft.Insights/components',
        keyVault: 'Microsoft.KeyVault/vaults',
        eventHub: 'Microsoft.EventHub/namespaces/eventhubs',
      }[assignments[i].target as string];
      expect(scopes[0]).toContain(expected);
    }
  });

  test('with AZURE_PRINCIPAL_TYPE=ServicePrincipal the deployer assignment says so', () => {
    const d = new Deployment(compiledMainTemplate()!, azdParameters({ ...AZD_ENV, AZURE_PRINCIPAL_TYPE: 'ServicePrincipal' }));
    const deployer = d
      .modulesWith('Microsoft.Authorization/roleAssignments')
      .filter((m) => m.evaluator.parameter('principalId') === AZD_ENV.AZURE_PRINCIPAL_ID);
    expect(deployer.map((m) => m.evaluator.parameter('principalType'))).toEqual(['ServicePrincipal', 'ServicePrincipal']);
  });

  test('without principalId no deployer role is assigned', () => {
    const d = new Deployment(compiledMainTemplate()!, azdParameters({ ...AZD_ENV, AZURE_PRINCIPAL_ID: '' }));
    expect(d.modulesWith('Microsoft.Authorization/roleAssignments')).toHaveLength(8);
  });

  test('local auth is off everywhere: Storage shared keys, Service Bus, Cosmos DB, Application Insights', () => {
    const byType = (type: string) =>
      deployment()
        .allResources()
        .filter((r) => r.type === type);
    expect(byType('Microsoft.Storage/storageAccounts').map((r) => r.properties.allowSharedKeyAccess)).toEqual([false]);
    expect(byType('Microsoft.ServiceBus/namespaces').map((r) => r.properties.disableLocalAuth)).toEqual([true]);
    expect(byType('Microsoft.EventHub/namespaces').map((r) => [r.properties.disableLocalAuth, r.properties.minimumTlsVersion])).toEqual([[true, '1.2']]);
    expect(byType('Microsoft.DocumentDB/databaseAccounts').map((r) => r.properties.disableLocalAuth)).toEqual([true]);
    expect(byType('Microsoft.Insights/components').map((r) => r.properties.DisableLocalAuth)).toEqual([true]);
  });

  test('rewards on Event Hubs: Standard namespace, the hub (4 partitions, 7 days), its consumer group, the rewards table; the trigger connects with the identity', () => {
    const d = deployment();
    const byType = (type: string) => d.allResources().filter((r) => r.type === type);
    const hubs = byType('Microsoft.EventHub/namespaces/eventhubs');
    expect(hubs.map((h) => [String(h.name).split('/').pop(), h.properties.partitionCount, h.properties.retentionDescription])).toEqual([
      ['payments-succeeded', 4, { cleanupPolicy: 'Delete', retentionTimeInHours: 168 }],
    ]);
    expect(byType('Microsoft.EventHub/namespaces/eventhubs/consumergroups').map((g) => String(g.name).split('/').pop())).toEqual(['rewards']);
    const settings = d.appSettings();
    expect(settings.EventHubConnection__fullyQualifiedNamespace).toMatch(/^evhns-\w+\.servicebus\.windows\.net$/);
    expect(settings).toMatchObject({
      EventHubConnection__credential: 'managedidentity',
      REWARDS_EVENT_HUB_NAME: 'payments-succeeded',
      REWARDS_CONSUMER_GROUP: 'rewards',
      REWARDS_TABLE_NAME: 'rewards',
    });
    expect(settings.EventHubConnection__clientId).toBe(settings.AZURE_CLIENT_ID);
    expect(byType('Microsoft.Storage/storageAccounts/tableServices/tables').map((t) => String(t.name).split('/').pop())).toContain('rewards');
  });

  test('Key Vault: RBAC only, soft delete; purge protection off by default (a second azd up after azd down --purge works), on with KEY_VAULT_PURGE_PROTECTION=true (recoverable with KEY_VAULT_CREATE_MODE=recover); the webhook secrets are Key Vault references the identity resolves', () => {
    const d = deployment();
    const vaults = d.allResources().filter((r) => r.type === 'Microsoft.KeyVault/vaults');
    expect(vaults.map((v) => v.properties)).toEqual([
      expect.objectContaining({
        enableRbacAuthorization: true,
        enableSoftDelete: true,
        softDeleteRetentionInDays: 90,
        createMode: 'default',
        enabledForTemplateDeployment: false,
      }),
    ]);
    // Off is left out, never `false`: the service refuses to set purge protection to false.
    expect(vaults[0].properties.enablePurgeProtection ?? null).toBeNull();
    const production = new Deployment(
      compiledMainTemplate()!,
      azdParameters({ ...AZD_ENV, KEY_VAULT_PURGE_PROTECTION: 'true', KEY_VAULT_CREATE_MODE: 'recover' }),
    )
      .allResources()
      .find((r) => r.type === 'Microsoft.KeyVault/vaults')!;
    expect(production.properties).toMatchObject({ enablePurgeProtection: true, softDeleteRetentionInDays: 90, createMode: 'recover' });
    // No access policies: the data plane is governed by role assignments only.
    expect(vaults[0].properties.accessPolicies ?? []).toEqual([]);
    const settings = d.appSettings();
    expect(settings.WEBHOOK_SIGNING_SECRET).toMatch(/^@Microsoft\.KeyVault\(SecretUri=.+secrets\/webhook-signing-secret\)$/);
    expect(settings.WEBHOOK_SIGNING_SECRET_PREVIOUS).toMatch(/^@Microsoft\.KeyVault\(SecretUri=.+secrets\/webhook-signing-secret-previous\)$/);
    const site = d
      .moduleWith('Microsoft.Web/sites')
      .resources()
      .find((r) => r.type === 'Microsoft.Web/sites')!;
    expect(String(site.properties.keyVaultReferenceIdentity)).toMatch(/Microsoft\.ManagedIdentity\/userAssignedIdentities\//);
  });

  test('no output of main or of a module carries a key or a connection string', () => {
    const template = compiledMainTemplate()!;
    const all = [
      ...Object.entries(template.outputs ?? {}),
      ...(resourcesOf(template).flatMap((r) => Object.entries(r.properties?.template?.outputs ?? {})) as Array<[string, { value: unknown }]>),
    ];
    expect(all.length).toBeGreaterThan(10);
    const leaking = all.filter(
      ([name, o]) =>
        /key|connectionstring|secret|password|sas/i.test(name) ||
        /listKeys|listConnectionStrings|ConnectionString|InstrumentationKey/i.test(JSON.stringify(o.value)),
    );
    expect(leaking.map(([name]) => name)).toEqual([]);
  });
});

describeCompiled('compiled infra/main.bicep: payment shards (shardCount, issue 52)', () => {
  const sharded = (count: number, env: Record<string, string> = {}) =>
    new Deployment(compiledMainTemplate()!, azdParameters({ ...AZD_ENV, ...env, SHARD_COUNT: String(count) }));
  const byType = (d: Deployment, type: string) => d.allResources().filter((r) => r.type === type);
  const names = (d: Deployment, type: string) => byType(d, type).map((r) => String(r.name));
  const token = () => String(names(sharded(1), 'Microsoft.Web/sites')[0]).replace(/^func-api-/, '');

  test("shardCount: an int from 1 to 64 (the app's cap), 1 by default (azd SHARD_COUNT); Service Bus tier Standard or Premium (SERVICE_BUS_SKU), messaging units 1-64; partitions 1-16, 4 by default", () => {
    const p = compiledMainTemplate()!.parameters!;
    expect(p.shardCount).toMatchObject({ type: 'int', defaultValue: 1, minValue: 1, maxValue: 64 });
    expect(p.durablePartitionCount).toMatchObject({ type: 'int', defaultValue: 4, minValue: 1, maxValue: 16 });
    expect(azdParameters(AZD_ENV).shardCount).toBe('1');
    expect(p.serviceBusSku).toMatchObject({ type: 'string', defaultValue: 'Standard', allowedValues: ['Standard', 'Premium'] });
    expect(p.serviceBusMessagingUnits).toMatchObject({ type: 'int', defaultValue: 1, allowedValues: [1, 2, 4, 8, 16, 32, 64] });
  });

  test("one shard: today's layout (queue payments, task hub idempotentconsumer, one app, plan and account), shard 1 of 1", () => {
    const d = sharded(1);
    const t = token();
    expect(names(d, 'Microsoft.Web/sites')).toEqual([`func-api-${t}`]);
    expect(names(d, 'Microsoft.Web/serverfarms')).toEqual([`plan-${t}`]);
    expect(names(d, 'Microsoft.Storage/storageAccounts')).toEqual([`st${t}`]);
    expect(names(d, 'Microsoft.ServiceBus/namespaces/queues').map((n) => n.split('/').pop())).toEqual(['payments', 'orders']);
    const settings = d.appSettings();
    expect(settings).toMatchObject({
      PAYMENTS_QUEUE_NAME: 'payments',
      DURABLE_TASK_HUB_NAME: 'idempotentconsumer',
      PAYMENT_SHARD_COUNT: '1',
      PAYMENT_SHARD_INDEX: '0',
    });
    expect(Object.keys(settings).filter((k) => k.startsWith('AzureWebJobs.'))).toEqual([]);
  });

  test('three shards: an app, a Flex plan and a storage account each, the app on its own plan and account, with its own queue and task hub', () => {
    const d = sharded(3);
    const t = token();
    expect(names(d, 'Microsoft.Web/sites')).toEqual([`func-api-${t}`, `func-api-${t}-s1`, `func-api-${t}-s2`]);
    expect(names(d, 'Microsoft.Web/serverfarms')).toEqual([`plan-${t}`, `plan-${t}-s1`, `plan-${t}-s2`]);
    expect(names(d, 'Microsoft.Storage/storageAccounts')).toEqual([`st${t}`, `st${t}s1`, `st${t}s2`]);
    for (const account of names(d, 'Microsoft.Storage/storageAccounts')) expect(account).toMatch(/^[a-z0-9]{3,24}$/);
    expect(names(d, 'Microsoft.ServiceBus/namespaces/queues').map((n) => n.split('/').pop())).toEqual(['payments-0', 'payments-1', 'payments-2', 'orders']);
    // Every account has the four tables the app reads from its own account (the idempotency table among them).
    const tables = names(d, 'Microsoft.Storage/storageAccounts/tableServices/tables');
    for (const account of names(d, 'Microsoft.Storage/storageAccounts'))
      expect(tables.filter((n) => n.startsWith(`${account}/`)).map((n) => n.split('/').pop())).toEqual([
        'idempotency',
        'parkedmessages',
        'paymentstate',
        'rewards',
      ]);
    const apps = d.modulesWith('Microsoft.Web/sites');
    expect(apps).toHaveLength(3);
    const containers = new Set<string>();
    for (const [i, app] of apps.entries()) {
      const site = app.resources().find((r) => r.type === 'Microsoft.Web/sites')!;
      expect(String(site.properties.serverFarmId)).toBe(`resourceid:Microsoft.Web/serverfarms/${names(d, 'Microsoft.Web/serverfarms')[i]}`);
      expect(app.evaluator.parameter('serviceName')).toBe(i === 0 ? 'api' : `api-s${i}`);
      const settings = d.appSettings(i);
      expect(settings).toMatchObject({
        AzureWebJobsStorage__accountName: names(d, 'Microsoft.Storage/storageAccounts')[i],
        PAYMENTS_QUEUE_NAME: `payments-${i}`,
        DURABLE_TASK_HUB_NAME: `idempotentconsumers${i}`,
        PAYMENT_SHARD_COUNT: '3',
        PAYMENT_SHARD_INDEX: String(i),
        ORDERS_QUEUE_NAME: 'orders',
      });
      // The table endpoint and the deployment package are the shard's own account's (the module reads that account).
      expect(app.evaluator.parameter('storageAccountName')).toBe(names(d, 'Microsoft.Storage/storageAccounts')[i]);
      const container = String(app.evaluator.parameter('deploymentStorageContainerName'));
      expect(names(d, 'Microsoft.Storage/storageAccounts/blobServices/containers')).toContain(
        `${names(d, 'Microsoft.Storage/storageAccounts')[i]}/default/${container}`,
      );
      containers.add(container);
      // One rewards consumer: shard 0's (one reader of the hub, one balances table).
      expect(settings['AzureWebJobs.rewardsConsumer.Disabled']).toBe(i === 0 ? undefined : 'true');
    }
    expect(containers.size).toBe(3);
  });

  test("any shard finds every shard's queue from its own settings: PAYMENTS_QUEUE_NAME is <base>-<PAYMENT_SHARD_INDEX>, shard j's is <base>-<j>", () => {
    const d = sharded(3);
    const queues = names(d, 'Microsoft.ServiceBus/namespaces/queues').map((n) => n.split('/').pop());
    for (const i of [0, 1, 2]) {
      const settings = d.appSettings(i);
      const suffix = `-${settings.PAYMENT_SHARD_INDEX}`;
      expect(settings.PAYMENTS_QUEUE_NAME.endsWith(suffix)).toBe(true);
      const base = settings.PAYMENTS_QUEUE_NAME.slice(0, -suffix.length);
      const all = Array.from({ length: Number(settings.PAYMENT_SHARD_COUNT) }, (_, j) => `${base}-${j}`);
      expect(all.filter((q) => !queues.includes(q))).toEqual([]);
    }
  });

  test("every shard's app has the map of every shard's table endpoint in shard order, its own entry its own account's; the app's settings check accepts it", () => {
    const d = sharded(3);
    const accounts = names(d, 'Microsoft.Storage/storageAccounts');
    const expected = accounts.map((account) => `https://${account}.table.core.windows.net/`).join(',');
    for (const i of [0, 1, 2]) {
      const settings = d.appSettings(i);
      expect(settings.PAYMENT_SHARD_TABLE_ENDPOINTS).toBe(expected);
      expect(settings.PAYMENT_SHARD_TABLE_ENDPOINTS.split(',')[Number(settings.PAYMENT_SHARD_INDEX)]).toContain(`//${accounts[i]}.table.`);
      const env = { ...settings, IDEMPOTENCY_TABLE_ENDPOINT: `https://${accounts[i]}.table.core.windows.net/` };
      expect(loadSettings(env).PAYMENT_SHARD_TABLE_ENDPOINTS).toBe(expected);
    }
    expect(sharded(1).appSettings().PAYMENT_SHARD_TABLE_ENDPOINTS).toBeUndefined();
  });

  test("sixty-four shards (the most, the app's cap): every name within its resource's rules (account 3-24 lowercase letters and digits, task hub 3-45 letters and digits, container 3-63)", () => {
    const d = sharded(64);
    expect(names(d, 'Microsoft.Web/sites')).toHaveLength(64);
    for (const account of names(d, 'Microsoft.Storage/storageAccounts')) expect(account).toMatch(/^[a-z0-9]{3,24}$/);
    expect(new Set(names(d, 'Microsoft.Storage/storageAccounts')).size).toBe(64);
    for (const i of [0, 63]) expect(d.appSettings(i).DURABLE_TASK_HUB_NAME).toMatch(/^[A-Za-z][A-Za-z0-9]{2,44}$/);
    for (const container of names(d, 'Microsoft.Storage/storageAccounts/blobServices/containers'))
      expect(container.split('/').pop()).toMatch(/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/);
    expect(names(d, 'Microsoft.ServiceBus/namespaces/queues')).toHaveLength(65);
    expect(d.modulesWith('Microsoft.Authorization/roleAssignments')).toHaveLength(64 + 1 + 1 + 3 * 64 + 1 + 2 + 1);
  });

  test('the 10,000 payments/s row (issue 63): 63 shards of 16 partitions, Premium with 32 units on 4 messaging partitions', () => {
    const d = new Deployment(compiledMainTemplate()!, {
      ...azdParameters(AZD_ENV),
      shardCount: 63,
      durablePartitionCount: 16,
      serviceBusSku: 'Premium',
      serviceBusMessagingUnits: 32,
    });
    const namespace = d.allResources().find((r) => r.type === 'Microsoft.ServiceBus/namespaces')!;
    expect(namespace.properties.premiumMessagingPartitions).toBe(4);
    expect(d.appSettings(62).AzureFunctionsJobHost__extensions__durableTask__storageProvider__partitionCount).toBe('16');
    expect(d.appSettings(0).PAYMENT_SHARD_COUNT).toBe('63');
    expect(
      sharded(1)
        .allResources()
        .find((r) => r.type === 'Microsoft.ServiceBus/namespaces')!.properties.premiumMessagingPartitions,
    ).toBeNull();
  });

  test('three shards share one Service Bus namespace, Event Hubs namespace, Application Insights, identity, Key Vault and Cosmos DB account', () => {
    const d = sharded(3);
    for (const type of [
      'Microsoft.ServiceBus/namespaces',
      'Microsoft.EventHub/namespaces',
      'Microsoft.Insights/components',
      'Microsoft.ManagedIdentity/userAssignedIdentities',
      'Microsoft.KeyVault/vaults',
      'Microsoft.DocumentDB/databaseAccounts',
    ])
      expect({ type, count: byType(d, type).length }).toEqual({ type, count: 1 });
    const shared = [
      'SERVICEBUS_FULLY_QUALIFIED_NAMESPACE',
      'AZURE_CLIENT_ID',
      'COSMOS_ENDPOINT',
      'EventHubConnection__fullyQualifiedNamespace',
      'WEBHOOK_SIGNING_SECRET',
    ];
    const of = (i: number) => Object.fromEntries(shared.map((k) => [k, d.appSettings(i)[k]]));
    expect(of(1)).toEqual(of(0));
    expect(of(2)).toEqual(of(0));
    const identities = byType(d, 'Microsoft.Web/sites').map((s) => String(s.properties.keyVaultReferenceIdentity));
    expect(identities).toHaveLength(3);
    expect(new Set(identities).size).toBe(1);
  });

  test("three shards: the identity every app runs as holds Data Owner on every shard's queue (POST /api/payments on any shard sends to the owner's queue) and the data roles on every account", () => {
    const d = sharded(3);
    const t = token();
    const assignments = d.modulesWith('Microsoft.Authorization/roleAssignments').map((m) => ({
      principal: m.evaluator.parameter('principalId') === AZD_ENV.AZURE_PRINCIPAL_ID ? 'deployer' : 'app',
      target: `${String(m.evaluator.parameter('target'))} ${String(m.evaluator.parameter('targetName'))}`,
      role: m.evaluator.parameter('roleDefinitionId'),
    }));
    const app = (target: string) =>
      assignments
        .filter((a) => a.principal === 'app' && a.target === target)
        .map((a) => a.role)
        .sort();
    const dataOwner = '090c5cfd-751d-490a-894a-3ce6f1109419';
    for (const queue of ['payments-0', 'payments-1', 'payments-2', 'orders']) expect(app(`serviceBusQueue sb-${t}/${queue}`)).toEqual([dataOwner]);
    for (const account of [`st${t}`, `st${t}s1`, `st${t}s2`])
      expect(app(`storage ${account}`)).toEqual(
        ['b7e6dc6d-f1e8-4753-8033-0f276bb0955b', '974c5e8b-45b9-4653-ba55-5f855dd0fb88', '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'].sort(),
      );
    // 4 queues + 9 storage roles + Key Vault, Application Insights, the rewards hub; the deployer's 2 as before.
    expect(assignments.filter((a) => a.principal === 'app')).toHaveLength(16);
    expect(assignments.filter((a) => a.principal === 'deployer')).toHaveLength(2);
    // Every shard's site starts once every assignment exists: the api loop depends on the whole roleAssignment loop.
    const api = resourcesOf(compiledMainTemplate()!).find((r) => r.symbol === 'api')!;
    expect(api.copy).toBeDefined();
    expect((api as { dependsOn?: string[] }).dependsOn).toEqual(expect.arrayContaining(['roleAssignment', 'storage', 'storagePrivateEndpoint']));
  });

  test("three shards: a dead-letter alert for every queue; outputs name shard 0 (azd service api) and every shard's app", () => {
    const d = sharded(3);
    const watched = byType(d, 'Microsoft.Insights/metricAlerts').map(
      (a) => (a.properties.criteria as { allOf: Array<{ dimensions: Array<{ values: string[] }> }> }).allOf[0].dimensions[0].values[0],
    );
    expect(watched.sort()).toEqual(['orders', 'payments-0', 'payments-1', 'payments-2']);
    const outputs = compiledMainTemplate()!.outputs!;
    const t = token();
    expect(d.main.outputValue(outputs.SERVICE_API_NAME)).toBe(`func-api-${t}`);
    expect(d.main.outputValue(outputs.SHARD_FUNCTION_NAMES)).toEqual([`func-api-${t}`, `func-api-${t}-s1`, `func-api-${t}-s2`]);
    expect(sharded(1).main.outputValue(outputs.SHARD_FUNCTION_NAMES)).toEqual([`func-api-${t}`]);
  });

  test('Service Bus: Standard by default, Premium with SERVICE_BUS_SKU=Premium (messaging units from serviceBusMessagingUnits) or with vnetEnabled', () => {
    const skuOf = (given: Record<string, unknown>) => {
      const d = new Deployment(compiledMainTemplate()!, { ...azdParameters(AZD_ENV), ...given });
      const module = d.moduleWith('Microsoft.ServiceBus/namespaces');
      const resource = Object.values(module.template.resources).find((r) => r.type === 'Microsoft.ServiceBus/namespaces' && !r.existing)!;
      return module.evaluator.value(resource.sku);
    };
    expect(skuOf({})).toEqual({ name: 'Standard', tier: 'Standard' });
    expect(skuOf({ serviceBusSku: 'Premium' })).toEqual({ name: 'Premium', tier: 'Premium', capacity: 1 });
    expect(skuOf({ serviceBusSku: 'Premium', serviceBusMessagingUnits: 4 })).toEqual({ name: 'Premium', tier: 'Premium', capacity: 4 });
    expect(skuOf({ vnetEnabled: true })).toEqual({ name: 'Premium', tier: 'Premium', capacity: 1 });
    // Public network access follows vnetEnabled only: Premium alone stays public.
    const access = new Deployment(compiledMainTemplate()!, { ...azdParameters(AZD_ENV), serviceBusSku: 'Premium' })
      .allResources()
      .find((r) => r.type === 'Microsoft.ServiceBus/namespaces')!.properties.publicNetworkAccess;
    expect(access).toBe('Enabled');
  });
});

describeCompiled('compiled infra/main.bicep: one retention rule', () => {
  test('the deployed retention is the code rule (incl. lock auto-renewal per delivery), rounded up to days, over a grid', () => {
    const template = compiledMainTemplate()!;
    let cases = 0;
    for (const ttlDays of [1, 14, 90])
      for (const lockSeconds of [5, 60, 300])
        for (const deliveries of [1, 10, 2000])
          for (const marginDays of [0, 14])
            for (const renewalSeconds of [0, 300])
              for (const requestedDays of [1, 30]) {
                const deployment = new Deployment(template, {
                  ...azdParameters(AZD_ENV),
                  messageTtlDays: ttlDays,
                  lockDurationSeconds: lockSeconds,
                  maxDeliveryCount: deliveries,
                  dlqResubmitMarginDays: marginDays,
                  maxAutoLockRenewalSeconds: renewalSeconds,
                  idempotencyRetentionDays: requestedDays,
                });
                const deployed = Number(deployment.appSettings().IDEMPOTENCY_RETENTION_DAYS);
                const window = redeliveryWindow(
                  {
                    IDEMPOTENCY_RETENTION_DAYS: deployed,
                    SERVICEBUS_MESSAGE_TTL_SECONDS: ttlDays * 86_400,
                    SERVICEBUS_LOCK_DURATION_SECONDS: lockSeconds,
                    SERVICEBUS_MAX_DELIVERY_COUNT: deliveries,
                    DLQ_RESUBMIT_MARGIN_DAYS: marginDays,
                  },
                  { maxAutoLockRenewalMs: renewalSeconds * 1000 },
                );
                const minimumDays = Math.ceil(window.totalMs / 86_400_000);
                expect({ ttlDays, lockSeconds, deliveries, marginDays, renewalSeconds, requestedDays, deployed }).toEqual({
                  ttlDays,
                  lockSeconds,
                  deliveries,
                  marginDays,
                  renewalSeconds,
                  requestedDays,
                  deployed: Math.max(requestedDays, minimumDays),
                });
                cases++;
              }
    expect(cases).toBe(216);
  });
});

/** The evaluated properties (and names) of every queue the template deploys. */
function queueProperties(d: Deployment): Array<Record<string, unknown> & { name: string }> {
  return d
    .allResources()
    .filter((r) => r.type === 'Microsoft.ServiceBus/namespaces/queues')
    .map((r) => ({ ...r.properties, name: String(r.name).split('/').pop()! }));
}
