metadata description = '''
The Function App on Flex Consumption (Node 22) and every app setting it reads. All connections are
identity-based through the one user-assigned identity: no connection string, key or SAS is set.
The setting names here are the names in src/config/settings.ts (SETTING_NAMES), local.settings.json.example
and host.json; test/unit/infraConsistency.test.ts fails if they drift apart.
Flex Consumption rejects FUNCTIONS_WORKER_RUNTIME and FUNCTIONS_EXTENSION_VERSION as app settings (the
runtime comes from functionAppConfig.runtime), so they are deliberately absent.
'''

import { tagsType, shardSettingsType, idempotencySettingsType, serviceBusSettingsType, cosmosSettingsType, paymentProviderSettingsType, httpSettingsType, rewardsSettingsType } from '../types.bicep'

@description('Function App name.')
param name string
@description('Location of the Function App.')
param location string = resourceGroup().location
@description('Tags applied to the Function App (plus azd-service-name).')
param tags tagsType = {}
@description('azd service name (azure.yaml), set as the azd-service-name tag.')
param serviceName string = 'api'

@description('Resource id of the Flex Consumption plan.')
param appServicePlanId string
@description('Resource id of the user-assigned identity the app runs as.')
param identityId string
@description('Client id of that identity (AZURE_CLIENT_ID and the identity-based connections).')
param identityClientId string

@description('Storage account of AzureWebJobsStorage, the deployment container and the idempotency tables.')
param storageAccountName string
@description('Blob container Flex Consumption deploys the app package from.')
param deploymentStorageContainerName string
@description('Application Insights component the app sends telemetry to.')
param applicationInsightsName string

@description('Service Bus namespace host name, e.g. sb-abc.servicebus.windows.net.')
param serviceBusFullyQualifiedNamespace string
@description('Cosmos DB account endpoint (COSMOS_ENDPOINT).')
param cosmosEndpoint string

@description('Node.js version of the Flex Consumption runtime.')
param runtimeVersion string = '22'
@allowed([
  512
  2048
  4096
])
@description('Memory of each instance in MB: 512 (0.25 core), 2048 (1 core) or 4096 (2 cores), the sizes Flex Consumption offers.')
param instanceMemoryMB int = 2048
@description('Largest number of instances the app scales out to.')
param maximumInstanceCount int = 100
@minValue(0)
@description('Always-ready instances of the Durable Functions group (orchestrations, entities, activities). Documented advice for Durable Functions on Flex Consumption: 1, so a charge never waits for a cold Durable start.')
param durableAlwaysReadyInstances int = 1

@description('Resource id of the subnet of the outbound virtual network integration (empty: none, the public deployment).')
param virtualNetworkSubnetId string = ''

@description('Settings read by the app code (src/config/settings.ts) and by host.json, computed in main.bicep.')
param idempotency idempotencySettingsType
@description('Service Bus delivery settings and queue names, computed in main.bicep.')
param serviceBus serviceBusSettingsType
@description('Cosmos DB database and container names.')
param cosmos cosmosSettingsType
@description('Payment provider URL and timeout.')
param paymentProvider paymentProviderSettingsType
@description('HTTP functions: Idempotency-Key records, caller identity, webhook secret reference.')
param http httpSettingsType
@description('Durable Functions task hub name (DURABLE_TASK_HUB_NAME, used by host.json).')
param durableTaskHubName string
@minValue(1)
@maxValue(16)
@description('Control-queue partitions of the task hub (host.json extensions.durableTask.storageProvider.partitionCount, set by its app setting override). Fixed when the hub is created: a change needs a new hub (docs/deploy.md section 11).')
param durablePartitionCount int = 4
@description('The payment shard this app is: how many there are and which one (PAYMENT_SHARD_COUNT, PAYMENT_SHARD_INDEX).')
param shard shardSettingsType = {
  count: 1
  index: 0
}
@description('The rewards consumer: Event Hubs namespace, hub, consumer group, table.')
param rewards rewardsSettingsType

resource storage 'Microsoft.Storage/storageAccounts@2026-09-01' existing = {
  name: storageAccountName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

@description('Every app setting of the Function App: host storage, Service Bus, telemetry and the settings the code reads.')
var appSettings = union(commonSettings, shard.count == 1 ? {} : shardMapSettings, shard.index == 0 ? {} : shardOnlySettings)

// With more than one shard every app reaches a payment's owner through its account's table endpoint: the status, the
// accepted marker, the webhook's Payment row (src/payments/shardTables.ts). One shard: no map, today's settings.
@description('Settings of every app when there is more than one shard.')
var shardMapSettings = {
  PAYMENT_SHARD_TABLE_ENDPOINTS: join(shard.?tableEndpoints ?? [], ',')
}

// Shards past the first run no rewards consumer: one reader of the hub, one balances table (shard 0's account, the
// unsharded deployment's). Each shard would read every event against its own checkpoints and table, and a consumer group
// takes at most 5 readers a partition. The Functions host's per-function switch, AzureWebJobs.<name>.Disabled
// (learn.microsoft.com/azure/azure-functions/disable-function).
@description('Settings of a shard other than shard 0.')
var shardOnlySettings = {
  'AzureWebJobs.rewardsConsumer.Disabled': 'true'
}

@description('The app settings every shard has.')
var commonSettings = {
  // Host storage (AzureWebJobsStorage), identity-based: Functions host, timers, Durable Functions (Azure
  // Storage provider: queues + tables + blobs).
  AzureWebJobsStorage__accountName: storage.name
  AzureWebJobsStorage__blobServiceUri: storage.properties.primaryEndpoints.blob
  AzureWebJobsStorage__queueServiceUri: storage.properties.primaryEndpoints.queue
  AzureWebJobsStorage__tableServiceUri: storage.properties.primaryEndpoints.table
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId

  // Service Bus trigger connection "ServiceBusConnection", identity-based.
  ServiceBusConnection__fullyQualifiedNamespace: serviceBusFullyQualifiedNamespace
  ServiceBusConnection__credential: 'managedidentity'
  ServiceBusConnection__clientId: identityClientId

  // Application Insights with local auth disabled: ingestion with an Entra token of the identity.
  APPLICATIONINSIGHTS_CONNECTION_STRING: applicationInsights.properties.ConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'ClientId=${identityClientId};Authorization=AAD'

  // DefaultAzureCredential in the app code picks the user-assigned identity with this.
  AZURE_CLIENT_ID: identityClientId

  // host.json: extensions.durableTask.hubName = %DURABLE_TASK_HUB_NAME%
  DURABLE_TASK_HUB_NAME: durableTaskHubName
  // host.json's partitionCount (default 4) overridden by app setting (AzureFunctionsJobHost__<path>): the sizing's
  // partitions per hub (docs/performance.md "Sizing from every limit").
  AzureFunctionsJobHost__extensions__durableTask__storageProvider__partitionCount: string(durablePartitionCount)

  // The payment shards (docs/deploy.md "Shards"): a payment belongs to the shard its key hashes to; this app consumes
  // PAYMENTS_QUEUE_NAME, its shard's queue, and refuses to start when its table holds a live record of another shard.
  PAYMENT_SHARD_COUNT: string(shard.count)
  PAYMENT_SHARD_INDEX: string(shard.index)

  // src/config/settings.ts (IDEMPOTENCY_TABLE_CONNECTION_STRING is local-only and never set in Azure).
  IDEMPOTENCY_TABLE_NAME: idempotency.tableName
  PARKED_TABLE_NAME: idempotency.parkedTableName
  IDEMPOTENCY_TABLE_ENDPOINT: storage.properties.primaryEndpoints.table
  IDEMPOTENCY_PARTITION_COUNT: string(idempotency.partitionCount)
  IDEMPOTENCY_LEASE_SECONDS: string(idempotency.leaseSeconds)
  IDEMPOTENCY_CACHE_SIZE: string(idempotency.cacheSize)
  IDEMPOTENCY_STORE_TIMEOUT_MS: string(idempotency.storeTimeoutMs)
  IDEMPOTENCY_RETENTION_DAYS: string(idempotency.retentionDays)
  DLQ_RESUBMIT_MARGIN_DAYS: string(idempotency.dlqResubmitMarginDays)
  EXPIRY_TIMER_SCHEDULE: idempotency.expiryTimerSchedule
  EXPIRY_SWEEP_BUDGET_SECONDS: string(idempotency.expirySweepBudgetSeconds)
  SERVICEBUS_LOCK_DURATION_SECONDS: string(serviceBus.lockDurationSeconds)
  SERVICEBUS_MAX_DELIVERY_COUNT: string(serviceBus.maxDeliveryCount)
  SERVICEBUS_MESSAGE_TTL_SECONDS: string(serviceBus.messageTtlDays * 86400)
  PAYMENTS_QUEUE_NAME: serviceBus.paymentsQueueName
  ORDERS_QUEUE_NAME: serviceBus.ordersQueueName
  PAYMENT_PROVIDER_URL: paymentProvider.url
  PAYMENT_PROVIDER_TIMEOUT_MS: string(paymentProvider.timeoutMs)
  // Hand off, don't hold (docs/DESIGN.md): the orchestration retries transient provider failures for the budget.
  PAYMENTS_DESIGN: 'handoff'
  PAYMENT_RETRY_BUDGET_MINUTES: '60'
  PAYMENT_RETRY_FIRST_DELAY_SECONDS: '5'
  PAYMENT_RETRY_MAX_DELAY_SECONDS: '300'
  // What the provider offers (docs/DESIGN.md "Look before you charge again"): Stripe keeps keys 24 h and has no
  // look-up by key; 'by-key' only for a provider that answers GET /v1/charges?idempotency_key=.
  PAYMENT_PROVIDER_LOOKUP: 'none'
  PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '24'
  // What a call can take besides its timeout (src/payments/callLease.ts: they size a call's lease): the provider's work
  // after the client gave up, and the look-up's lag.
  PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS: '60'
  PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS: '60'
  // Stripe replays every answer under a key (500s included); 'successes' for a provider that caches only 2xx (Checkout.com).
  PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'every-answer'
  // The ledger check under every guard (docs/DESIGN.md): Stripe lists its charges by `created`, read-after-write (delay
  // 0); a provider without a list (Adyen) takes 'none', and the app says at start that no check runs.
  PAYMENT_PROVIDER_LEDGER: 'list'
  PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS: '0'
  LEDGER_CHECK_SCHEDULE: '0 */5 * * * *'
  LEDGER_CHECK_PAGES_PER_TICK: '50'
  LEDGER_CHECK_BUDGET_SECONDS: '120'
  COSMOS_ENDPOINT: cosmosEndpoint
  COSMOS_DATABASE_NAME: cosmos.databaseName
  COSMOS_ORDERS_CONTAINER: cosmos.ordersContainerName
  IDEMPOTENCY_STORE: cosmos.idempotencyStore
  COSMOS_IDEMPOTENCY_CONTAINER: cosmos.idempotencyContainerName

  // HTTP functions (src/http). POST /api/payments sends to the payments queue with the identity
  // (SERVICEBUS_CONNECTION_STRING is local-only). The webhook secret is a Key Vault reference the platform
  // resolves with keyVaultReferenceIdentity (below); its value never appears in an app setting.
  SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: serviceBusFullyQualifiedNamespace
  HTTP_IDEMPOTENCY_RETENTION_HOURS: string(http.retentionHours)
  HTTP_IDEMPOTENCY_LEASE_SECONDS: string(http.leaseSeconds)
  HTTP_CALLER_IDENTITY: http.callerIdentity
  WEBHOOK_SIGNING_SECRET: '@Microsoft.KeyVault(SecretUri=${http.webhookSecretUri})'
  // During a rotation the previous secret is accepted too; while its vault entry is absent the reference stays
  // unresolved and the app ignores it (docs/deploy.md "Rotating the webhook secret").
  WEBHOOK_SIGNING_SECRET_PREVIOUS: '@Microsoft.KeyVault(SecretUri=${http.webhookPreviousSecretUri})'
  WEBHOOK_TOLERANCE_SECONDS: string(http.webhookToleranceSeconds)
  WEBHOOK_RETENTION_HOURS: string(http.webhookRetentionHours)
  PAYMENT_STATE_TABLE_NAME: http.paymentStateTableName

  // The rewards consumer (src/functions/rewards.ts): Event Hubs trigger connection "EventHubConnection",
  // identity-based (Azure Event Hubs Data Receiver on the hub); checkpoints go to AzureWebJobsStorage's blobs.
  EventHubConnection__fullyQualifiedNamespace: rewards.fullyQualifiedNamespace
  EventHubConnection__credential: 'managedidentity'
  EventHubConnection__clientId: identityClientId
  REWARDS_EVENT_HUB_NAME: rewards.hubName
  REWARDS_CONSUMER_GROUP: rewards.consumerGroup
  REWARDS_TABLE_NAME: rewards.tableName
  // Markers outlive what can replay them: the hub's retention plus one day (src/lifecycle/rewardMarkers.ts).
  REWARDS_EVENT_HUB_RETENTION_DAYS: string(rewards.eventHubRetentionDays)
  REWARDS_MARKER_RETENTION_DAYS: string(rewards.eventHubRetentionDays + 1)
  REWARDS_EVENT_HUB_CLEANUP_POLICY: rewards.eventHubCleanupPolicy
}

// Microsoft.Web/sites@2025-03-01 with functionAppConfig (Flex Consumption)
resource functionApp 'Microsoft.Web/sites@2025-03-01' = {
  name: name
  location: location
  tags: union(tags, { 'azd-service-name': serviceName })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: appServicePlanId
    httpsOnly: true
    // Key Vault references (WEBHOOK_SIGNING_SECRET) are resolved with the user-assigned identity (Key Vault Secrets User).
    keyVaultReferenceIdentity: identityId
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
    }
    // vnetEnabled: the app's outbound traffic (storage, Service Bus, Event Hubs, Cosmos DB, Key Vault references) goes
    // through this subnet to the services' private endpoints.
    virtualNetworkSubnetId: empty(virtualNetworkSubnetId) ? null : virtualNetworkSubnetId
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentStorageContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        instanceMemoryMB: instanceMemoryMB
        maximumInstanceCount: maximumInstanceCount
        alwaysReady: [
          {
            name: 'durable'
            instanceCount: durableAlwaysReadyInstances
          }
        ]
      }
      runtime: {
        name: 'node'
        version: runtimeVersion
      }
    }
  }

  resource configAppSettings 'config' = {
    name: 'appsettings'
    properties: appSettings
  }

  // No FTP and no basic (user name and password) publishing: azd deploys with an Entra token.
  resource ftpPublishing 'basicPublishingCredentialsPolicies' = {
    name: 'ftp'
    properties: {
      allow: false
    }
  }

  resource scmPublishing 'basicPublishingCredentialsPolicies' = {
    name: 'scm'
    properties: {
      allow: false
    }
  }
}

@description('Function App name.')
output name string = functionApp.name
@description('Function App base URL.')
output uri string = 'https://${functionApp.properties.defaultHostName}'
