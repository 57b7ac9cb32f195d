// Idempotent consumer on Azure Functions (Flex Consumption, Node 22): subscription-scope entry point for
// `azd up` and `az deployment sub create`. Layout follows Azure-Samples/functions-quickstart-typescript-azd:
// main.bicep creates the resource group and calls modules in app/ (this app) and core/ (generic pieces).
// Compiled and linted with every rule on by the Bicep CLI 0.49.2 (infra/bicepconfig.json); API versions are
// the most recent stable ones it knows. test/unit/infraConsistency.test.ts cross-checks it against the code.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the environment, used to derive a unique token for resource names.')
param environmentName string

@minLength(1)
@description('Primary location for all resources (must offer Flex Consumption).')
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

@description('Object id of the deploying user or service principal. Gets Service Bus Data Sender and Event Hubs Data Sender on the rewards hub so the producer CLI can send test messages and events. Empty: no deployer role.')
param principalId string = ''

@description('Type of principalId: User for a person, ServicePrincipal when azd or az runs as a service principal (azd sets AZURE_PRINCIPAL_TYPE).')
@allowed([
  'User'
  'ServicePrincipal'
])
param principalType string = 'User'

@description('Resource group name (empty: rg-<environmentName>).')
param resourceGroupName string = ''

// ---- Flex Consumption instance size. ----
@allowed([
  512
  2048
  4096
])
@description('Memory of each Function App instance in MB (INSTANCE_MEMORY_MB): 512 (0.25 core), 2048 (1 core) or 4096 (2 cores). Flex bills GB-s = this memory x active time (at least 1 s per execution), so a smaller size costs less per execution but gives each instance fewer cores; choose 512 only after checking the instance\'s memory working set in Azure.')
param instanceMemoryMB int = 2048

// ---- The two deployment switches (docs/deploy.md "Security review" and "What each switch costs"). ----
// No default: the deployer chooses (azd asks for VNET_ENABLED when it is not set), as Microsoft's Flex Consumption
// quickstarts do (Azure-Samples/functions-quickstart-*-azd: `param vnetEnabled bool`).
@description('Private deployment (VNET_ENABLED), the deployer\'s choice (azd asks; no default): true gives a virtual network, the Function App\'s outbound integration, private endpoints and private DNS zones for storage (blob, queue, table), Key Vault, Cosmos DB, Event Hubs and Service Bus, and public network access off on each. Service Bus private endpoints need Premium: on, the namespace is Premium whatever serviceBusSku says (serviceBusMessagingUnits units, 1 by default: about $668 a month instead of Standard\'s $9.72). false: every service has a public endpoint (identity-based access only, no keys).')
param vnetEnabled bool

@description('Zone redundancy (ZONE_REDUNDANT): the Flex Consumption plan spread over availability zones (the platform then keeps at least two always-ready instances per function group), the storage account (idempotency records, task hub, deployment package) on Standard_ZRS instead of Standard_LRS, and the Service Bus namespace zone redundant: Premium (zones are a Premium feature), serviceBusMessagingUnits units.')
param zoneRedundant bool = false

// ---- Past one task hub (docs/deploy.md "Shards"). ----
@minValue(1)
@maxValue(64)
@description('Payment shards (SHARD_COUNT, at most 64 as the app): N task hubs, sized by docs/performance.md "Sizing from every limit": N task hubs, a payment routed to one by its key. Each shard has its own Function App, Flex Consumption plan, storage account (its task hub and its idempotency table) and payments queue; the rest is shared. 1: the unsharded deployment. A change of N moves keys between shards: drain every queue first (docs/deploy.md "Shards").')
param shardCount int = 1

@allowed([
  'Standard'
  'Premium'
])
@description('Service Bus tier (SERVICE_BUS_SKU). Standard: about 1,000 credits a second per namespace, a credit per message sent or received (about 333 payments a second at send, receive and complete); Premium (messaging units) past that. vnetEnabled always deploys Premium.')
param serviceBusSku string = 'Standard'

@allowed([
  1
  2
  4
  8
  16
  32
  64
])
@description('Messaging units of a Premium namespace (SERVICE_BUS_MESSAGING_UNITS; 32 and 64 deploy it with 4 messaging partitions, set only at creation); ignored on Standard. Sized in docs/performance.md "Sizing from every limit".')
param serviceBusMessagingUnits int = 1

@minValue(1)
@maxValue(16)
@description('Control-queue partitions of every shard\'s task hub (DURABLE_PARTITION_COUNT; Durable\'s default 4, at most 16): the most workers that run a hub\'s orchestrations at once. Fixed when a hub is created (docs/deploy.md section 11).')
param durablePartitionCount int = 4

// ---- Service Bus delivery settings: the same values go to the queues and to the app settings. ----
@minValue(5)
@maxValue(300)
@description('Queue lock duration in seconds (SERVICEBUS_LOCK_DURATION_SECONDS).')
param lockDurationSeconds int = 60

@minValue(1)
@maxValue(2000)
@description('Queue maxDeliveryCount (SERVICEBUS_MAX_DELIVERY_COUNT).')
param maxDeliveryCount int = 10

@minValue(1)
@description('Queue defaultMessageTimeToLive in days (SERVICEBUS_MESSAGE_TTL_SECONDS = days x 86400).')
param messageTtlDays int = 14

@minValue(0)
@maxValue(3600)
@description('Longest the Functions host renews one delivery\'s lock: host.json extensions.serviceBus.maxAutoLockRenewalDuration in seconds (the app\'s retention rule reads the same 300 s).')
param maxAutoLockRenewalSeconds int = 300

@description('Broker-side duplicate detection window on MessageId (ISO 8601).')
param duplicateDetectionHistoryTimeWindow string = 'PT10M'

@description('Payments queue name (PAYMENTS_QUEUE_NAME).')
param paymentsQueueName string = 'payments'
@description('Orders queue name (ORDERS_QUEUE_NAME).')
param ordersQueueName string = 'orders'

// ---- Idempotency store. ----
@description('Dedup record table name (IDEMPOTENCY_TABLE_NAME).')
param idempotencyTableName string = 'idempotency'
@description('Parked-message table name (PARKED_TABLE_NAME).')
param parkedMessagesTableName string = 'parkedmessages'

@minValue(1)
@description('Requested dedup-record retention in days. Raised automatically to the broker redelivery horizon (see effectiveRetentionDays).')
param idempotencyRetentionDays int = 30

@minValue(0)
@description('Days an operator may take to resubmit a dead-lettered message (DLQ_RESUBMIT_MARGIN_DAYS).')
param dlqResubmitMarginDays int = 14

@description('Partitions of the dedup table, fixed for the table\'s lifetime (IDEMPOTENCY_PARTITION_COUNT).')
param idempotencyPartitionCount int = 16
@description('Default claim lease in seconds (IDEMPOTENCY_LEASE_SECONDS).')
param idempotencyLeaseSeconds int = 60
@description('Entries of the in-process cache of completed keys, 0 turns it off (IDEMPOTENCY_CACHE_SIZE).')
param idempotencyCacheSize int = 10000
@minValue(100)
@maxValue(600000)
@description('Deadline of each call to the idempotency table, in milliseconds (IDEMPOTENCY_STORE_TIMEOUT_MS).')
param idempotencyStoreTimeoutMs int = 5000
@description('NCRONTAB schedule of the dedup-record expiry timer (EXPIRY_TIMER_SCHEDULE).')
param expiryTimerSchedule string = '0 */15 * * * *'
@description('Time budget of one expiry sweep in seconds (EXPIRY_SWEEP_BUDGET_SECONDS).')
param expirySweepBudgetSeconds int = 240

// ---- Orders store and payment provider. ----
@description('Cosmos DB database name (COSMOS_DATABASE_NAME).')
param cosmosDatabaseName string = 'shop'
@description('Cosmos DB orders container name (COSMOS_ORDERS_CONTAINER).')
param cosmosOrdersContainerName string = 'orders'
@allowed(['table', 'cosmos'])
@description('The payments consumer\'s dedup store (IDEMPOTENCY_STORE): the idempotency table, or the Cosmos DB container below (docs/stores.md).')
param idempotencyStore string = 'table'
@description('Cosmos DB container of the idempotency records (COSMOS_IDEMPOTENCY_CONTAINER): partition key /recordId, TTL on.')
param cosmosIdempotencyContainerName string = 'idempotency'

@minLength(1)
@description('Base URL of the third-party payment provider (https). Required: the app refuses to start without it (azd asks for PAYMENT_PROVIDER_URL).')
param paymentProviderUrl string
@description('Timeout of one payment provider call in milliseconds (PAYMENT_PROVIDER_TIMEOUT_MS).')
@minValue(100)
@maxValue(120000)
param paymentProviderTimeoutMs int = 10000

@description('Durable Functions task hub name (DURABLE_TASK_HUB_NAME).')
param durableTaskHubName string = 'idempotentconsumer'

// ---- HTTP functions (POST /api/payments, the provider webhook). ----
@minValue(1)
@maxValue(8760)
@description('Idempotency-Key record retention in hours (HTTP_IDEMPOTENCY_RETENTION_HOURS; Stripe keeps keys 24 h).')
param httpIdempotencyRetentionHours int = 24
@minValue(1)
@maxValue(3600)
@description('Lease of an HTTP request\'s claim in seconds (HTTP_IDEMPOTENCY_LEASE_SECONDS): how long a crashed request blocks its key (409).')
param httpIdempotencyLeaseSeconds int = 30
@description('What scopes Idempotency-Keys: functionKey (the caller\'s function key), or easyAuth once App Service authentication (Microsoft Entra ID) is configured in front of the app.')
@allowed([
  'functionKey'
  'easyAuth'
])
param httpCallerIdentity string = 'functionKey'
@minValue(1)
@maxValue(3600)
@description('Accepted clock skew of a webhook signature in seconds (WEBHOOK_TOLERANCE_SECONDS).')
param webhookToleranceSeconds int = 300
@minValue(1)
@maxValue(8760)
@description('Event-id dedup retention in hours (WEBHOOK_RETENTION_HOURS): longer than the provider retries a webhook.')
param webhookRetentionHours int = 72
@description('Table of the Payment rows the webhook writes (PAYMENT_STATE_TABLE_NAME).')
param paymentStateTableName string = 'paymentstate'
// ---- The rewards consumer (Event Hubs). ----
@description('Event hub of PaymentSucceeded events the rewards consumer reads (REWARDS_EVENT_HUB_NAME).')
param rewardsEventHubName string = 'payments-succeeded'
@description('Consumer group of the rewards consumer (REWARDS_CONSUMER_GROUP).')
param rewardsConsumerGroup string = 'rewards'
@description('Table of the customers\' balances and applied-event markers (REWARDS_TABLE_NAME).')
param rewardsTableName string = 'rewards'
@minValue(1)
@maxValue(32)
@description('Partitions of the rewards hub (fixed at creation): the most instances that read it at once.')
param eventHubPartitionCount int = 4
@minValue(1)
@maxValue(7)
@description('Days the rewards hub keeps an event (Standard: at most 7); the rewards markers are kept one day more, then swept by the expiry timer.')
param eventHubRetentionDays int = 7
@allowed([
  'Delete'
  'Compact'
])
@description('Cleanup policy of the rewards hub (REWARDS_EVENT_HUB_CLEANUP_POLICY): the rewards consumer runs only on Delete (compaction bounds no replay).')
param eventHubCleanupPolicy string = 'Delete'

@description('Key Vault purge protection (KEY_VAULT_PURGE_PROTECTION): on for production. Off, `azd down --purge` frees the vault name for the next `azd up`; on, the deleted vault keeps its name 90 days and a redeploy recovers it (keyVaultCreateMode).')
param keyVaultPurgeProtection bool = false
@allowed([
  'default'
  'recover'
])
@description('Key Vault create mode (KEY_VAULT_CREATE_MODE): recover brings back the soft-deleted vault of this environment after `azd down` (needed with purge protection on).')
param keyVaultCreateMode string = 'default'

@secure()
@description('The payment provider\'s webhook signing secret, stored in Key Vault (never in an app setting). Empty: set the secret in the vault by hand.')
param webhookSigningSecret string = ''

// ---- Alerts. ----
@description('Duplicate rate (percent of claim attempts per consumer over 15 minutes) that fires the alert.')
param duplicateRateAlertThresholdPercent int = 5
@description('Claim attempts a consumer needs in 15 minutes before its duplicate rate can fire the alert.')
param duplicateRateAlertMinClaims int = 50
@description('Action group resource id the alerts notify (empty: alerts only show in the portal).')
param alertActionGroupId string = ''

@description('Resource-type name prefixes (abbreviations.json).')
var abbrs = loadJsonContent('./abbreviations.json')
@description('Token unique to subscription, environment and location, used in resource names.')
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
@description('Tags on every resource: the azd environment name.')
var tags = { 'azd-env-name': environmentName }

@description('Service Bus tier as deployed: Premium for the private deployment (private endpoints), zone redundancy (availability zones) or SERVICE_BUS_SKU=Premium.')
var serviceBusPremium = vnetEnabled || zoneRedundant || serviceBusSku == 'Premium'

@description('Every resource name, all known before deployment.')
var names = {
  resourceGroup: !empty(resourceGroupName) ? resourceGroupName : '${abbrs.resourcesResourceGroups}${environmentName}'
  functionApp: '${abbrs.webSitesFunctions}api-${resourceToken}'
  plan: '${abbrs.webServerFarms}${resourceToken}'
  identity: '${abbrs.managedIdentityUserAssignedIdentities}api-${resourceToken}'
  storage: '${abbrs.storageStorageAccounts}${resourceToken}'
  serviceBus: '${abbrs.serviceBusNamespaces}${resourceToken}'
  eventHubs: '${abbrs.eventHubNamespaces}${resourceToken}'
  cosmos: '${abbrs.documentDBDatabaseAccounts}${resourceToken}'
  logAnalytics: '${abbrs.operationalInsightsWorkspaces}${resourceToken}'
  appInsights: '${abbrs.insightsComponents}${resourceToken}'
  alertPrefix: '${abbrs.insightsScheduledQueryRules}${resourceToken}'
  keyVault: '${abbrs.keyVaultVaults}${take(resourceToken, 21)}'
  virtualNetwork: '${abbrs.networkVirtualNetworks}${resourceToken}'
  privateEndpointPrefix: '${abbrs.networkPrivateEndpoints}${resourceToken}'
}
// The payment shards (shardCount): shard 0 keeps the names of the unsharded deployment (its app, plan and account), so
// going from 1 to N keeps today's app and records as shard 0; shard i > 0 adds s<i>. With N > 1 every shard's queue
// and task hub carry its index, with N = 1 they keep their names (docs/deploy.md "Shards").
@description('Function App name of every shard.')
var shardAppNames = [for i in range(0, shardCount): i == 0 ? names.functionApp : '${names.functionApp}-s${i}']
@description('Every payment shard: its Function App, Flex plan, storage account, deployment container, payments queue, task hub and azd service name.')
var shards = [
  for i in range(0, shardCount): {
    index: i
    suffix: i == 0 ? '' : '-s${i}'
    functionApp: shardAppNames[i]
    plan: i == 0 ? names.plan : '${names.plan}-s${i}'
    storage: i == 0 ? names.storage : '${names.storage}s${i}'
    // The blob container the app package is deployed to, unique to the shard's Function App.
    deploymentContainer: 'app-package-${take(shardAppNames[i], 32)}-${take(toLower(uniqueString(shardAppNames[i], resourceToken)), 7)}'
    paymentsQueue: shardCount == 1 ? paymentsQueueName : '${paymentsQueueName}-${i}'
    taskHub: shardCount == 1 ? durableTaskHubName : '${durableTaskHubName}s${i}'
    serviceName: i == 0 ? 'api' : 'api-s${i}'
  }
]
// The status, the webhook and the operator's tools reach a payment's owner shard through its account's table endpoint
// (PAYMENT_SHARD_TABLE_ENDPOINTS; the one identity holds Table Data Contributor on every account): docs/deploy.md "Shards".
@description('The table endpoint of every shard\'s storage account, in shard order (the account\'s primaryEndpoints.table, dnsEndpointType Standard).')
var shardTableEndpoints = [for shard in shards: 'https://${shard.storage}.table.${environment().suffixes.storage}/']
@description('The payments queue of every shard, in shard order.')
var paymentsQueueNames = [for shard in shards: shard.paymentsQueue]
@description('Every queue of the namespace: the shards\' payments queues, then orders.')
var queueNames = concat(paymentsQueueNames, [ordersQueueName])

// Retention rule, by construction: a dedup record must outlive every redelivery the broker can still make:
//   retention >= message TTL + maxDeliveryCount x (lockDuration + lock auto-renewal) + DLQ resubmit margin
// The app's rule (src/lifecycle/retention.ts, redeliveryWindow) is the same sum; a test evaluates this
// compiled expression against it over a grid of settings. Rounded up to whole days, never below the request.
@description('Seconds after enqueue during which a message can still arrive (redelivery or DLQ resubmission); a dedup record must outlive it.')
var redeliveryHorizonSeconds = messageTtlDays * 86400 + maxDeliveryCount * (lockDurationSeconds + maxAutoLockRenewalSeconds) + dlqResubmitMarginDays * 86400
@description('redeliveryHorizonSeconds rounded up to whole days.')
var minimumRetentionDays = (redeliveryHorizonSeconds + 86399) / 86400
@description('Deployed dedup-record retention: the requested days, raised to minimumRetentionDays.')
var effectiveRetentionDays = max(idempotencyRetentionDays, minimumRetentionDays)

// Built-in Azure role definition ids (documented GUIDs; the same map is asserted in the cross-check test).
@description('Built-in Azure role definition ids, by role.')
var roles = {
  serviceBusDataOwner: '090c5cfd-751d-490a-894a-3ce6f1109419' // Azure Service Bus Data Owner
  serviceBusDataSender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39' // Azure Service Bus Data Sender
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6' // Key Vault Secrets User
  eventHubsDataReceiver: 'a638d3c7-ab3a-418d-83e6-5f17a39d4fde' // Azure Event Hubs Data Receiver
  eventHubsDataSender: '2b629674-e913-4c01-ae53-ef4638d8f975' // Azure Event Hubs Data Sender
}

// Every Azure RBAC assignment, deployed by looping the one reusable module. `principal` says who gets it:
// 'app' = the user-assigned identity every shard's Function App runs as, 'deployer' = principalId (skipped when empty).
// The trigger queues: Data Owner, scoped to each queue (not the namespace). Receive and complete, send (POST
// /api/payments on any shard sends to the queue of the shard that owns the key: the one identity holds the role on every
// shard's queue), and read the queue's runtime properties (message count), which target-based scaling needs: with Data
// Receiver (Listen) alone the scale controller cannot read the queue length and falls back to incremental scaling
// (docs/deploy.md "Service Bus scaling").
@description('Data Owner on every shard\'s payments queue.')
var paymentsQueueRoles = [
  for queueName in paymentsQueueNames: { principal: 'app', target: 'serviceBusQueue', targetName: '${names.serviceBus}/${queueName}', roleDefinitionId: roles.serviceBusDataOwner }
]
// Each shard's account: host storage (blobs, queues, tables of its task hub, the deployment package) and its tables.
@description('The data roles on each shard\'s storage account, a list per shard.')
var storageRolesByShard = [
  for shard in shards: [
    { principal: 'app', target: 'storage', targetName: shard.storage, roleDefinitionId: roles.storageBlobDataOwner }
    { principal: 'app', target: 'storage', targetName: shard.storage, roleDefinitionId: roles.storageQueueDataContributor }
    { principal: 'app', target: 'storage', targetName: shard.storage, roleDefinitionId: roles.storageTableDataContributor }
  ]
]
@description('Every Azure RBAC assignment: who gets it, on which resource, which role.')
var roleAssignments = concat(
  paymentsQueueRoles,
  [
    { principal: 'app', target: 'serviceBusQueue', targetName: '${names.serviceBus}/${ordersQueueName}', roleDefinitionId: roles.serviceBusDataOwner }
    // The webhook secret's Key Vault reference: read secrets, nothing else.
    { principal: 'app', target: 'keyVault', targetName: names.keyVault, roleDefinitionId: roles.keyVaultSecretsUser }
  ],
  flatten(storageRolesByShard),
  [
    { principal: 'app', target: 'appInsights', targetName: names.appInsights, roleDefinitionId: roles.monitoringMetricsPublisher }
    { principal: 'deployer', target: 'serviceBus', targetName: names.serviceBus, roleDefinitionId: roles.serviceBusDataSender }
    // The rewards trigger reads its hub (receive only; its checkpoints are blobs of the host storage, covered by
    // Storage Blob Data Owner above). The deployer may send PaymentSucceeded events with the producer CLI.
    { principal: 'app', target: 'eventHub', targetName: '${names.eventHubs}/${rewardsEventHubName}', roleDefinitionId: roles.eventHubsDataReceiver }
    { principal: 'deployer', target: 'eventHub', targetName: '${names.eventHubs}/${rewardsEventHubName}', roleDefinitionId: roles.eventHubsDataSender }
  ]
)

// The private deployment's DNS zones (learn.microsoft.com/azure/private-link/private-endpoint-dns): Event Hubs and
// Service Bus namespaces share privatelink.servicebus.windows.net.
@description('Private DNS zone of each private endpoint kind.')
var privateDnsZoneNames = {
  blob: 'privatelink.blob.${environment().suffixes.storage}'
  queue: 'privatelink.queue.${environment().suffixes.storage}'
  table: 'privatelink.table.${environment().suffixes.storage}'
  vault: 'privatelink.vaultcore.azure.net'
  cosmos: 'privatelink.documents.azure.com'
  messaging: 'privatelink.servicebus.windows.net'
}
@description('Zone names in the order the DNS zone module creates them.')
var privateDnsZoneList = [
  privateDnsZoneNames.blob
  privateDnsZoneNames.queue
  privateDnsZoneNames.table
  privateDnsZoneNames.vault
  privateDnsZoneNames.cosmos
  privateDnsZoneNames.messaging
]

// Microsoft.Resources/resourceGroups@2025-04-01
resource rg 'Microsoft.Resources/resourceGroups@2025-04-01' = {
  name: names.resourceGroup
  location: location
  tags: tags
}

module identity 'core/identity/userAssignedIdentity.bicep' = {
  scope: rg
  params: {
    name: names.identity
    location: location
    tags: tags
  }
}

// Declared before the modules that send it their diagnostic settings (the workspace id is its output).
module monitoring 'core/monitor/monitoring.bicep' = {
  scope: rg
  params: {
    logAnalyticsName: names.logAnalytics
    applicationInsightsName: names.appInsights
    location: location
    tags: tags
  }
}

// One Flex Consumption plan per shard: each shard's app scales on its own.
module plan 'core/host/flexConsumptionPlan.bicep' = [
  for shard in shards: {
    scope: rg
    params: {
      name: shard.plan
      location: location
      tags: tags
      zoneRedundant: zoneRedundant
    }
  }
]

// One storage account per shard: its task hub and its tables (the app reads every table from its own account),
// so no two hubs share an account's 20,000 requests a second (docs/performance.md).
module storage 'core/storage/storageAccount.bicep' = [
  for shard in shards: {
    scope: rg
    params: {
      name: shard.storage
      location: location
      tags: tags
      deploymentContainerName: shard.deploymentContainer
      tableNames: [
        idempotencyTableName
        parkedMessagesTableName
        paymentStateTableName
        rewardsTableName
      ]
      privateNetworkOnly: vnetEnabled
      zoneRedundant: zoneRedundant
      logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
    }
  }
]

module eventHubs 'core/messaging/eventHubs.bicep' = {
  scope: rg
  params: {
    name: names.eventHubs
    location: location
    tags: tags
    hubName: rewardsEventHubName
    partitionCount: eventHubPartitionCount
    retentionDays: eventHubRetentionDays
    cleanupPolicy: eventHubCleanupPolicy
    consumerGroupName: rewardsConsumerGroup
    privateNetworkOnly: vnetEnabled
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

module serviceBus 'core/messaging/serviceBus.bicep' = {
  scope: rg
  params: {
    name: names.serviceBus
    location: location
    tags: tags
    queueNames: queueNames
    premium: serviceBusPremium
    messagingUnits: serviceBusMessagingUnits
    zoneRedundant: zoneRedundant
    lockDurationSeconds: lockDurationSeconds
    maxDeliveryCount: maxDeliveryCount
    messageTtlDays: messageTtlDays
    duplicateDetectionHistoryTimeWindow: duplicateDetectionHistoryTimeWindow
    privateNetworkOnly: vnetEnabled
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

module cosmos 'core/database/cosmosServerless.bicep' = {
  scope: rg
  params: {
    name: names.cosmos
    location: location
    tags: tags
    databaseName: cosmosDatabaseName
    ordersContainerName: cosmosOrdersContainerName
    idempotencyContainerName: cosmosIdempotencyContainerName
    #disable-next-line what-if-short-circuiting // The principal id exists only once the identity is created; the Cosmos role assignment name is derived from it.
    dataContributorPrincipalId: identity.outputs.principalId
    privateNetworkOnly: vnetEnabled
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

module keyVault 'core/security/keyVault.bicep' = {
  scope: rg
  params: {
    name: names.keyVault
    location: location
    tags: tags
    webhookSigningSecret: webhookSigningSecret
    enablePurgeProtection: keyVaultPurgeProtection
    createMode: keyVaultCreateMode
    privateNetworkOnly: vnetEnabled
    logAnalyticsWorkspaceId: monitoring.outputs.logAnalyticsId
  }
}

// ---- The private deployment (vnetEnabled): network, DNS zones, one private endpoint per service. ----
module virtualNetwork 'core/network/virtualNetwork.bicep' = if (vnetEnabled) {
  scope: rg
  params: {
    name: names.virtualNetwork
    location: location
    tags: tags
  }
}

module privateDnsZones 'core/network/privateDnsZones.bicep' = if (vnetEnabled) {
  scope: rg
  params: {
    zoneNames: privateDnsZoneList
    #disable-next-line what-if-short-circuiting // The zones link to the network created in this deployment.
    virtualNetworkId: virtualNetwork.?outputs.resourceId ?? ''
    tags: tags
  }
}

@description('The private endpoints of every shard\'s storage account (blob, queue, table): the shard, its sub-resource (groupId) and its DNS zone (index in privateDnsZoneList).')
var storagePrivateEndpointsByShard = [
  for shard in shards: [
    { name: 'blob${shard.suffix}', shard: shard.index, groupId: 'blob', zone: 0 }
    { name: 'queue${shard.suffix}', shard: shard.index, groupId: 'queue', zone: 1 }
    { name: 'table${shard.suffix}', shard: shard.index, groupId: 'table', zone: 2 }
  ]
]
@description('The private endpoints of the shared services: the service (a key of privateEndpointServiceIds), its sub-resource (groupId) and its DNS zone (index in privateDnsZoneList).')
var privateEndpoints = [
  { name: 'vault', service: 'keyVault', groupId: 'vault', zone: 3 }
  { name: 'cosmos', service: 'cosmos', groupId: 'Sql', zone: 4 }
  { name: 'servicebus', service: 'serviceBus', groupId: 'namespace', zone: 5 }
  { name: 'eventhubs', service: 'eventHubs', groupId: 'namespace', zone: 5 }
]
@description('Resource id of each shared service a private endpoint connects to (module outputs: each endpoint waits for its service).')
var privateEndpointServiceIds = {
  keyVault: keyVault.outputs.resourceId
  cosmos: cosmos.outputs.resourceId
  serviceBus: serviceBus.outputs.resourceId
  eventHubs: eventHubs.outputs.resourceId
}

module storagePrivateEndpoint 'core/network/privateEndpoint.bicep' = [
  for endpoint in flatten(storagePrivateEndpointsByShard): if (vnetEnabled) {
    scope: rg
    params: {
      name: '${names.privateEndpointPrefix}-${endpoint.name}'
      location: location
      tags: tags
      subnetId: virtualNetwork.?outputs.privateEndpointSubnetId ?? ''
      serviceId: storage[endpoint.shard].outputs.resourceId
      groupId: endpoint.groupId
      privateDnsZoneId: privateDnsZones.?outputs.zoneIds[endpoint.zone] ?? ''
    }
  }
]

module privateEndpoint 'core/network/privateEndpoint.bicep' = [
  for endpoint in privateEndpoints: if (vnetEnabled) {
    scope: rg
    params: {
      name: '${names.privateEndpointPrefix}-${endpoint.name}'
      location: location
      tags: tags
      subnetId: virtualNetwork.?outputs.privateEndpointSubnetId ?? ''
      serviceId: privateEndpointServiceIds[endpoint.service]
      groupId: endpoint.groupId
      privateDnsZoneId: privateDnsZones.?outputs.zoneIds[endpoint.zone] ?? ''
    }
  }
]

module roleAssignment 'core/security/roleAssignment.bicep' = [
  for (assignment, i) in roleAssignments: if (assignment.principal == 'app' || !empty(principalId)) {
    scope: rg
    params: {
      target: assignment.target
      targetName: assignment.targetName
      roleDefinitionId: assignment.roleDefinitionId
      #disable-next-line what-if-short-circuiting // The app identity's principal id exists only once it is created; the role assignment name is derived from it.
      principalId: assignment.principal == 'app' ? identity.outputs.principalId : principalId
      principalType: assignment.principal == 'app' ? 'ServicePrincipal' : principalType
    }
    dependsOn: [
      storage
      serviceBus
      eventHubs
      monitoring
      keyVault
    ]
  }
]

module api 'app/api.bicep' = [
  for shard in shards: {
    scope: rg
    params: {
      name: shard.functionApp
      location: location
      tags: tags
      appServicePlanId: plan[shard.index].outputs.resourceId
      identityId: identity.outputs.resourceId
      identityClientId: identity.outputs.clientId
      storageAccountName: shard.storage
      deploymentStorageContainerName: shard.deploymentContainer
      applicationInsightsName: names.appInsights
      serviceBusFullyQualifiedNamespace: serviceBus.outputs.fullyQualifiedNamespace
      cosmosEndpoint: cosmos.outputs.endpoint
      runtimeVersion: '22'
      instanceMemoryMB: instanceMemoryMB
      virtualNetworkSubnetId: virtualNetwork.?outputs.appSubnetId ?? ''
      durableTaskHubName: shard.taskHub
      durablePartitionCount: durablePartitionCount
      serviceName: shard.serviceName
      shard: {
        count: shardCount
        index: shard.index
        tableEndpoints: shardTableEndpoints
      }
      idempotency: {
        tableName: idempotencyTableName
        parkedTableName: parkedMessagesTableName
        partitionCount: idempotencyPartitionCount
        leaseSeconds: idempotencyLeaseSeconds
        cacheSize: idempotencyCacheSize
        storeTimeoutMs: idempotencyStoreTimeoutMs
        retentionDays: effectiveRetentionDays
        dlqResubmitMarginDays: dlqResubmitMarginDays
        expiryTimerSchedule: expiryTimerSchedule
        expirySweepBudgetSeconds: expirySweepBudgetSeconds
      }
      serviceBus: {
        lockDurationSeconds: lockDurationSeconds
        maxDeliveryCount: maxDeliveryCount
        messageTtlDays: messageTtlDays
        paymentsQueueName: shard.paymentsQueue
        ordersQueueName: ordersQueueName
      }
      cosmos: {
        databaseName: cosmosDatabaseName
        ordersContainerName: cosmosOrdersContainerName
        idempotencyContainerName: cosmosIdempotencyContainerName
        idempotencyStore: idempotencyStore
      }
      paymentProvider: {
        url: paymentProviderUrl
        timeoutMs: paymentProviderTimeoutMs
      }
      http: {
        retentionHours: httpIdempotencyRetentionHours
        leaseSeconds: httpIdempotencyLeaseSeconds
        callerIdentity: httpCallerIdentity
        webhookToleranceSeconds: webhookToleranceSeconds
        webhookRetentionHours: webhookRetentionHours
        paymentStateTableName: paymentStateTableName
        webhookSecretUri: keyVault.outputs.webhookReferenceUri
        webhookPreviousSecretUri: keyVault.outputs.webhookPreviousReferenceUri
      }
      rewards: {
        fullyQualifiedNamespace: eventHubs.outputs.fullyQualifiedNamespace
        hubName: rewardsEventHubName
        consumerGroup: rewardsConsumerGroup
        tableName: rewardsTableName
        // The hub's retention and cleanup policy as deployed (the parameters the hub is made of): the app refuses to start
        // when its markers do not outlive what can replay an event (src/lifecycle/rewardMarkers.ts).
        eventHubRetentionDays: eventHubRetentionDays
        eventHubCleanupPolicy: eventHubCleanupPolicy
      }
    }
    // The host starts as soon as the site exists: give it its data-plane roles first, and (private deployment) its
    // routes to the services.
    dependsOn: [
      roleAssignment
      storage
      storagePrivateEndpoint
      privateEndpoint
    ]
  }
]

module operations 'app/operations.bicep' = {
  scope: rg
  params: {
    location: location
    tags: tags
    applicationInsightsName: names.appInsights
    alertNamePrefix: names.alertPrefix
    duplicateRateThresholdPercent: duplicateRateAlertThresholdPercent
    duplicateRateMinClaims: duplicateRateAlertMinClaims
    actionGroupId: alertActionGroupId
  }
  // Names come from `names` (known before deployment, for What-If), so the order is explicit.
  dependsOn: [
    monitoring
  ]
}

// Issue 43 item 6: every queue's dead-letter count alerts (the broker's DeadletteredMessages metric, per queue).
module deadLetterAlerts 'app/deadLetterAlerts.bicep' = {
  scope: rg
  params: {
    tags: tags
    serviceBusNamespaceName: names.serviceBus
    queueNames: queueNames
    alertNamePrefix: names.alertPrefix
    actionGroupId: alertActionGroupId
  }
  dependsOn: [
    serviceBus
  ]
}

@description('Primary location of the resources.')
output AZURE_LOCATION string = location
@description('Tenant of the subscription.')
output AZURE_TENANT_ID string = tenant().tenantId
@description('Resource group holding every resource.')
output RESOURCE_GROUP string = rg.name
@description('Function App name of azd service api (shard 0).')
output SERVICE_API_NAME string = api[0].outputs.name
@description('Function App name (shard 0).')
output AZURE_FUNCTION_NAME string = api[0].outputs.name
@description('Function App name of every payment shard, in shard order (one with shardCount 1): deploy the code to each.')
output SHARD_FUNCTION_NAMES string[] = [for (shard, i) in shards: api[i].outputs.name]
@description('Service Bus namespace host name, for the producer CLI.')
output SERVICEBUS_FULLY_QUALIFIED_NAMESPACE string = serviceBus.outputs.fullyQualifiedNamespace
@description('Event Hubs namespace host name, for the producer CLI (rewards events).')
output EVENTHUB_FULLY_QUALIFIED_NAMESPACE string = eventHubs.outputs.fullyQualifiedNamespace
@description('Cosmos DB account endpoint.')
output COSMOS_ENDPOINT string = cosmos.outputs.endpoint
@description('Table service endpoint of the idempotency store (shard 0\'s account).')
output IDEMPOTENCY_TABLE_ENDPOINT string = storage[0].outputs.tableEndpoint
@description('Vault holding the provider webhook\'s signing value (entry webhook-signing-secret): set it with az keyvault secret set.')
output WEBHOOK_VAULT_NAME string = keyVault.outputs.name
@description('The Service Bus namespace as deployed: its tier, units and whether it is zone redundant, and why.')
output SERVICE_BUS_DEPLOYED string = serviceBusPremium
  ? 'Premium, ${serviceBusMessagingUnits} messaging unit(s), ${zoneRedundant ? 'zone redundant (ZONE_REDUNDANT=true)' : 'not zone redundant (ZONE_REDUNDANT=false)'}'
  : 'Standard (1,000 credits a second per namespace), not zone redundant: ZONE_REDUNDANT=false; ZONE_REDUNDANT=true deploys Premium, zone redundant'
@description('Dedup-record retention in days as deployed (effectiveRetentionDays).')
output IDEMPOTENCY_RETENTION_DAYS int = effectiveRetentionDays
