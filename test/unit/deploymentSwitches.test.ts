import { combinationName, formatDiagnostic, switchCombinations, type SwitchValues } from '../../tools/infra/compileTemplates';
import { azdParameters, compiledCombinations, compiledMainTemplate, describeCompiled, Deployment } from '../support/compiledTemplate';

/**
 * The deployment switches of infra/main.bicep, in every combination: the private deployment (`vnetEnabled`, azd
 * VNET_ENABLED) and zone redundancy (`zoneRedundant`, azd ZONE_REDUNDANT) of issue 45, and the payment shards
 * (`shardCount`, azd SHARD_COUNT, issue 52) at 1 and 3: every per-shard resource gets what the switches give. Each combination is
 * compiled by the real Bicep CLI (`bicep build-params` against main.bicep: 0 errors, 0 warnings) and the compiled
 * template is evaluated for it: what each switch deploys, and what stays the same both ways (diagnostic settings, FTP and
 * basic publishing off, the dead-letter alerts).
 */

const AZD_ENV = { AZURE_ENV_NAME: 'dev', AZURE_LOCATION: 'swedencentral', PAYMENT_PROVIDER_URL: 'https://provider.example.com' };

type Resource = ReturnType<Deployment['allResources']>[number];

function deployment(values: SwitchValues): Deployment {
  const env = { ...AZD_ENV, VNET_ENABLED: String(values.vnetEnabled), ZONE_REDUNDANT: String(values.zoneRedundant), SHARD_COUNT: String(values.shardCount) };
  return new Deployment(compiledMainTemplate()!, azdParameters(env));
}

function deploy(values: SwitchValues): Resource[] {
  return deployment(values).allResources();
}

const ofType = (resources: Resource[], type: string) => resources.filter((r) => r.type === type);
const one = (resources: Resource[], type: string) => {
  const found = ofType(resources, type);
  if (found.length !== 1) throw new Error(`${found.length} resources of type ${type}`);
  return found[0];
};

/** The five services a private deployment closes, by resource type (a storage account per shard). */
const SERVICES = [
  'Microsoft.Storage/storageAccounts',
  'Microsoft.KeyVault/vaults',
  'Microsoft.DocumentDB/databaseAccounts',
  'Microsoft.ServiceBus/namespaces',
  'Microsoft.EventHub/namespaces',
];

describeCompiled('deployment switches: the real Bicep CLI compiles every combination', () => {
  test('bicep build-params: 0 errors and 0 warnings for each of the 8 combinations', () => {
    const combinations = compiledCombinations()!;
    expect(combinations.map((c) => combinationName(c.values))).toEqual(switchCombinations().map(combinationName));
    const report = combinations.map(
      (c) => `${combinationName(c.values)}: ${[...c.errors, ...c.warnings].map(formatDiagnostic).concat(c.failures).join('; ') || 'clean'}`,
    );
    console.log(report.join('\n'));
    expect(report).toEqual(combinations.map((c) => `${combinationName(c.values)}: clean`));
  }, 120_000);
});

for (const values of switchCombinations()) {
  describeCompiled(`deployment switches: ${combinationName(values)}`, () => {
    let resources: Resource[];
    beforeAll(() => {
      resources = deploy(values);
    });

    test("private deployment: a network, every shard's app integrated into its delegated subnet, or none of it", () => {
      const sites = ofType(resources, 'Microsoft.Web/sites');
      expect(sites).toHaveLength(values.shardCount);
      const networks = ofType(resources, 'Microsoft.Network/virtualNetworks');
      if (!values.vnetEnabled) {
        expect(networks).toEqual([]);
        for (const site of sites) expect(site.properties.virtualNetworkSubnetId).toBeNull();
        return;
      }
      expect(networks).toHaveLength(1);
      const subnets = networks[0].properties.subnets as Array<{ name: string; properties: { delegations?: Array<{ properties: { serviceName: string } }> } }>;
      const app = subnets.find((s) => s.properties.delegations?.some((d) => d.properties.serviceName === 'Microsoft.App/environments'));
      expect(app).toBeDefined();
      for (const site of sites)
        expect(String(site.properties.virtualNetworkSubnetId)).toMatch(new RegExp(`Microsoft\\.Network/virtualNetworks/subnets/.*/${app!.name}$`));
    });

    test("private deployment: a private endpoint with its DNS zone for blob, queue, table (of every shard's account), the vault, Cosmos DB, Service Bus and Event Hubs", () => {
      const endpoints = ofType(resources, 'Microsoft.Network/privateEndpoints');
      const zones = ofType(resources, 'Microsoft.Network/privateDnsZones');
      const zoneGroups = ofType(resources, 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups');
      const links = ofType(resources, 'Microsoft.Network/privateDnsZones/virtualNetworkLinks');
      if (!values.vnetEnabled) {
        expect([...endpoints, ...zones, ...zoneGroups, ...links]).toEqual([]);
        return;
      }
      const connection = (e: Resource) =>
        (e.properties.privateLinkServiceConnections as Array<{ properties: { privateLinkServiceId: string; groupIds: string[] } }>)[0].properties;
      const targets = endpoints.map(
        (e) => `${String(connection(e).privateLinkServiceId).split(':')[1].split('/').slice(0, 2).join('/')} ${connection(e).groupIds.join()}`,
      );
      const perShard = ['Microsoft.Storage/storageAccounts blob', 'Microsoft.Storage/storageAccounts queue', 'Microsoft.Storage/storageAccounts table'];
      expect(targets.sort()).toEqual(
        [
          'Microsoft.DocumentDB/databaseAccounts Sql',
          'Microsoft.EventHub/namespaces namespace',
          'Microsoft.KeyVault/vaults vault',
          'Microsoft.ServiceBus/namespaces namespace',
          ...Array.from({ length: values.shardCount }, () => perShard).flat(),
        ].sort(),
      );
      // Each account has its own three endpoints.
      const storageIds = endpoints.map((e) => String(connection(e).privateLinkServiceId)).filter((id) => id.includes('Microsoft.Storage/'));
      expect(new Set(storageIds).size).toBe(values.shardCount);
      expect(new Set(endpoints.map((e) => String(e.name))).size).toBe(endpoints.length);
      expect(zones.map((z) => String(z.name)).sort()).toEqual(
        [
          'privatelink.blob.core.windows.net',
          'privatelink.documents.azure.com',
          'privatelink.queue.core.windows.net',
          'privatelink.servicebus.windows.net',
          'privatelink.table.core.windows.net',
          'privatelink.vaultcore.azure.net',
        ].sort(),
      );
      // Each endpoint's DNS record goes to the zone of its kind; every zone is linked to the network.
      const zoneOf: Record<string, string> = {
        blob: 'privatelink.blob.',
        queue: 'privatelink.queue.',
        table: 'privatelink.table.',
        vault: 'privatelink.vaultcore.',
        Sql: 'privatelink.documents.',
        namespace: 'privatelink.servicebus.',
      };
      expect(zoneGroups).toHaveLength(endpoints.length);
      for (const group of zoneGroups) {
        const config = (group.properties.privateDnsZoneConfigs as Array<{ name: string; properties: { privateDnsZoneId: string } }>)[0];
        expect(String(config.properties.privateDnsZoneId)).toContain(zoneOf[config.name]);
      }
      expect(links).toHaveLength(zones.length);
      for (const link of links) expect(String((link.properties.virtualNetwork as { id: string }).id)).toContain('Microsoft.Network/virtualNetworks');
    });

    test('private deployment: public network access off on every service (on otherwise); Service Bus Premium, else Standard', () => {
      const access = SERVICES.flatMap((type) => ofType(resources, type).map((r) => `${type} ${String(r.properties.publicNetworkAccess)}`));
      const expected = SERVICES.flatMap((type) => (type === 'Microsoft.Storage/storageAccounts' ? Array(values.shardCount).fill(type) : [type]));
      expect(access).toEqual(expected.map((type) => `${type} ${values.vnetEnabled ? 'Disabled' : 'Enabled'}`));
      for (const account of ofType(resources, 'Microsoft.Storage/storageAccounts'))
        expect((account.properties.networkAcls as { defaultAction: string }).defaultAction).toBe(values.vnetEnabled ? 'Deny' : 'Allow');
      const vaultAcls = one(resources, 'Microsoft.KeyVault/vaults').properties.networkAcls as { defaultAction: string };
      expect(vaultAcls.defaultAction).toBe(values.vnetEnabled ? 'Deny' : 'Allow');
      const serviceBusSku = (compiledServiceBusSku(values) ?? {}) as { name?: string; capacity?: number };
      // Premium for private endpoints, and for availability zones (zoneRedundant): the zone switch covers Service Bus too.
      expect(serviceBusSku).toMatchObject(values.vnetEnabled || values.zoneRedundant ? { name: 'Premium', capacity: 1 } : { name: 'Standard' });
    });

    test('zone redundancy: the Service Bus namespace is zone redundant (Premium) exactly when zoneRedundant; the deploy output says which', () => {
      const namespace = one(resources, 'Microsoft.ServiceBus/namespaces');
      expect(namespace.properties.zoneRedundant).toBe(values.zoneRedundant);
      const said = deployment(values).main.outputValue(compiledMainTemplate()!.outputs!.SERVICE_BUS_DEPLOYED) as string;
      expect(said).toMatch(values.zoneRedundant ? /^Premium, 1 messaging unit\(s\), zone redundant/ : /not zone redundant/);
    });

    test("zone redundancy: every shard's Flex plan zone-redundant and its storage account ZRS, or none", () => {
      const plans = ofType(resources, 'Microsoft.Web/serverfarms');
      expect(plans.map((p) => p.properties.zoneRedundant)).toEqual(Array(values.shardCount).fill(values.zoneRedundant));
      expect(skusOf(values, 'Microsoft.Storage/storageAccounts')).toEqual(
        Array(values.shardCount).fill({ name: values.zoneRedundant ? 'Standard_ZRS' : 'Standard_LRS' }),
      );
    });

    test('both ways: diagnostic settings to the workspace for the vault (audit), Service Bus, Event Hubs, Cosmos DB and storage', () => {
      const settings = ofType(resources, 'Microsoft.Insights/diagnosticSettings');
      const byModule = new Map<string, Resource[]>();
      for (const s of settings) byModule.set(s.module, [...(byModule.get(s.module) ?? []), s]);
      for (const s of settings) expect(String(s.properties.workspaceId)).toContain('log-');
      const logsOf = (r: Resource) => (r.properties.logs as Array<{ category?: string; categoryGroup?: string; enabled: boolean }> | undefined) ?? [];
      const moduleOf = (type: string) => resources.find((r) => r.type === type)!.module;
      expect(logsOf(byModule.get(moduleOf('Microsoft.KeyVault/vaults'))![0])).toEqual([{ categoryGroup: 'audit', enabled: true }]);
      expect(logsOf(byModule.get(moduleOf('Microsoft.ServiceBus/namespaces'))![0])).toEqual([{ categoryGroup: 'audit', enabled: true }]);
      expect(logsOf(byModule.get(moduleOf('Microsoft.EventHub/namespaces'))![0])).toEqual([{ categoryGroup: 'audit', enabled: true }]);
      expect(logsOf(byModule.get(moduleOf('Microsoft.DocumentDB/databaseAccounts'))![0])).toEqual([{ category: 'ControlPlaneRequests', enabled: true }]);
      // Every shard's account (metrics) and its blob, queue and table services; blob writes and deletes are logged.
      const accounts = deployment(values).modulesWith('Microsoft.Storage/storageAccounts');
      expect(accounts).toHaveLength(values.shardCount);
      for (const account of accounts) {
        const storage = byModule.get(account.name)!;
        expect(storage).toHaveLength(4);
        expect(
          storage
            .flatMap(logsOf)
            .map((l) => l.category)
            .sort(),
        ).toEqual(['StorageDelete', 'StorageWrite']);
      }
      expect(settings).toHaveLength(4 + 4 * values.shardCount);
    });

    test("both ways: no FTP, no basic publishing credentials (ftp and scm), FTPS state Disabled, on every shard's app", () => {
      const policies = ofType(resources, 'Microsoft.Web/sites/basicPublishingCredentialsPolicies');
      expect(policies.map((p) => `${String(p.name).split('/').pop()} ${String(p.properties.allow)}`).sort()).toEqual(
        Array.from({ length: values.shardCount }, () => ['ftp false', 'scm false'])
          .flat()
          .sort(),
      );
      for (const site of ofType(resources, 'Microsoft.Web/sites')) expect((site.properties.siteConfig as { ftpsState: string }).ftpsState).toBe('Disabled');
    });

    test('both ways: every Service Bus queue has a dead-letter alert (DeadletteredMessages, EntityName = the queue)', () => {
      const queues = ofType(resources, 'Microsoft.ServiceBus/namespaces/queues').map((q) => String(q.name).split('/').pop());
      const alerts = ofType(resources, 'Microsoft.Insights/metricAlerts');
      const watched = alerts.map((a) => {
        const c = (
          a.properties.criteria as {
            allOf: Array<{ metricName: string; operator: string; threshold: number; dimensions: Array<{ name: string; values: string[] }> }>;
          }
        ).allOf[0];
        expect(c).toMatchObject({ metricName: 'DeadletteredMessages', operator: 'GreaterThan', threshold: 0 });
        expect(c.dimensions.map((d) => d.name)).toEqual(['EntityName']);
        return c.dimensions[0].values.join();
      });
      expect(queues).toHaveLength(values.shardCount + 1);
      expect(watched.sort()).toEqual([...queues].sort());
    });
  });
}

/** The Service Bus namespace's `sku` as deployed (a resource property outside `properties`). */
function compiledServiceBusSku(values: SwitchValues): unknown {
  const [sku, ...more] = skusOf(values, 'Microsoft.ServiceBus/namespaces');
  if (more.length > 0) throw new Error('more than one Service Bus namespace');
  return sku;
}

/** The `sku` of every resource of `type` as deployed, one per module that deploys it (a storage account per shard). */
function skusOf(values: SwitchValues, type: string): unknown[] {
  return deployment(values)
    .modulesWith(type)
    .map((module) => {
      const resource = Object.values(module.template.resources).find((r) => r.type === type && !r.existing)!;
      return module.evaluator.value(resource.sku);
    });
}
