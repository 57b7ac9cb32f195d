// Idempotent consumer on Azure Functions (Flex Consumption, Node 22): subscription-scope entry point for
// `azd up` and `az deployment sub create`. Layout follows Azure-Samples/functions-quickstart-typescript-azd:
// main.bicep creates the resource group and calls modules in app/ (this app) and core/ (generic pieces).
// No Bicep compiler is reachable on the build machines: this was written against the documented resource
// schemas (API versions noted at each resource) and is checked by test/unit/infraConsistency.test.ts only.
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

@description('Object id of the deploying user or service principal. Gets Service Bus Data Sender so the producer CLI can send test messages. Empty: no deployer role.')
param principalId string = ''

@allowed([
  'User'
  'ServicePrincipal'
])
param principalType string = 'User'

param resourceGroupName string = ''

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

@description('Broker-side duplicate detection window on MessageId (ISO 8601).')
param duplicateDetectionHistoryTimeWindow string = 'PT10M'

param paymentsQueueName string = 'payments'
param ordersQueueName string = 'orders'

// ---- Idempotency store. ----
param idempotencyTableName string = 'idempotency'
param parkedMessagesTableName string = 'parkedmessages'

@minValue(1)
@description('Requested dedup-record retention in days. Raised automatically to the broker redelivery horizon (see effectiveRetentionDays).')
param idempotencyRetentionDays int = 30

@minValue(0)
@description('Days an operator may take to resubmit a dead-lettered message (DLQ_RESUBMIT_MARGIN_DAYS).')
param dlqResubmitMarginDays int = 14

param idempotencyPartitionCount int = 16
param idempotencyLeaseSeconds int = 60
param idempotencyCacheSize int = 10000
@minValue(100)
@maxValue(600000)
@description('Deadline of each call to the idempotency table, in milliseconds (IDEMPOTENCY_STORE_TIMEOUT_MS).')
param idempotencyStoreTimeoutMs int = 5000
param expiryTimerSchedule string = '0 */15 * * * *'
param expirySweepBudgetSeconds int = 240

// ---- Orders store and payment provider. ----
param cosmosDatabaseName string = 'shop'
param cosmosOrdersContainerName string = 'orders'

@description('Base URL of the third-party payment provider (empty: unset).')
param paymentProviderUrl string = ''
param paymentProviderTimeoutMs int = 10000

param durableTaskHubName string = 'idempotentconsumer'

// ---- Alerts. ----
@description('Duplicate rate (percent of claim attempts per consumer over 15 minutes) that fires the alert.')
param duplicateRateAlertThresholdPercent int = 5
param duplicateRateAlertMinClaims int = 50
param alertActionGroupId string = ''

var abbrs = loadJsonContent('./abbreviations.json')
var resourceToken = toLower(uniqueString(subscription().id, environmentName, location))
var tags = { 'azd-env-name': environmentName }

var names = {
  resourceGroup: !empty(resourceGroupName) ? resourceGroupName : '${abbrs.resourcesResourceGroups}${environmentName}'
  functionApp: '${abbrs.webSitesFunctions}api-${resourceToken}'
  plan: '${abbrs.webServerFarms}${resourceToken}'
  identity: '${abbrs.managedIdentityUserAssignedIdentities}api-${resourceToken}'
  storage: '${abbrs.storageStorageAccounts}${resourceToken}'
  serviceBus: '${abbrs.serviceBusNamespaces}${resourceToken}'
  cosmos: '${abbrs.documentDBDatabaseAccounts}${resourceToken}'
  logAnalytics: '${abbrs.operationalInsightsWorkspaces}${resourceToken}'
  appInsights: '${abbrs.insightsComponents}${resourceToken}'
  alertPrefix: '${abbrs.insightsScheduledQueryRules}${resourceToken}'
}
var deploymentStorageContainerName = 'app-package-${take(names.functionApp, 32)}-${take(toLower(uniqueString(names.functionApp, resourceToken)), 7)}'

// Retention rule, by construction: a dedup record must outlive every redelivery the broker can still make:
//   retention >= message TTL + lockDuration x maxDeliveryCount + DLQ resubmit margin
// Computed from the same parameters the queues use, rounded up to whole days, and never below the request.
var redeliveryHorizonSeconds = messageTtlDays * 86400 + lockDurationSeconds * maxDeliveryCount + dlqResubmitMarginDays * 86400
var minimumRetentionDays = (redeliveryHorizonSeconds + 86399) / 86400
var effectiveRetentionDays = max(idempotencyRetentionDays, minimumRetentionDays)

// Built-in Azure role definition ids (documented GUIDs; the same map is asserted in the cross-check test).
var roles = {
  serviceBusDataReceiver: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0' // Azure Service Bus Data Receiver
  serviceBusDataSender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39' // Azure Service Bus Data Sender
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3' // Storage Table Data Contributor
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher
}

// Every Azure RBAC assignment, deployed by looping the one reusable module. `principal` says who gets it:
// 'app' = the Function App's user-assigned identity, 'deployer' = principalId (skipped when empty).
var roleAssignments = [
  { principal: 'app', target: 'serviceBus', targetName: names.serviceBus, roleDefinitionId: roles.serviceBusDataReceiver }
  { principal: 'app', target: 'storage', targetName: names.storage, roleDefinitionId: roles.storageBlobDataOwner }
  { principal: 'app', target: 'storage', targetName: names.storage, roleDefinitionId: roles.storageQueueDataContributor }
  { principal: 'app', target: 'storage', targetName: names.storage, roleDefinitionId: roles.storageTableDataContributor }
  { principal: 'app', target: 'appInsights', targetName: names.appInsights, roleDefinitionId: roles.monitoringMetricsPublisher }
  { principal: 'deployer', target: 'serviceBus', targetName: names.serviceBus, roleDefinitionId: roles.serviceBusDataSender }
]

// Microsoft.Resources/resourceGroups@2021-04-01
resource rg 'Microsoft.Resources/resourceGroups@2021-04-01' = {
  name: names.resourceGroup
  location: location
  tags: tags
}

module identity 'core/identity/userAssignedIdentity.bicep' = {
  name: 'identity'
  scope: rg
  params: {
    name: names.identity
    location: location
    tags: tags
  }
}

module plan 'core/host/flexConsumptionPlan.bicep' = {
  name: 'plan'
  scope: rg
  params: {
    name: names.plan
    location: location
    tags: tags
  }
}

module storage 'core/storage/storageAccount.bicep' = {
  name: 'storage'
  scope: rg
  params: {
    name: names.storage
    location: location
    tags: tags
    deploymentContainerName: deploymentStorageContainerName
    tableNames: [
      idempotencyTableName
      parkedMessagesTableName
    ]
  }
}

module serviceBus 'core/messaging/serviceBus.bicep' = {
  name: 'serviceBus'
  scope: rg
  params: {
    name: names.serviceBus
    location: location
    tags: tags
    queueNames: [
      paymentsQueueName
      ordersQueueName
    ]
    lockDurationSeconds: lockDurationSeconds
    maxDeliveryCount: maxDeliveryCount
    messageTtlDays: messageTtlDays
    duplicateDetectionHistoryTimeWindow: duplicateDetectionHistoryTimeWindow
  }
}

module cosmos 'core/database/cosmosServerless.bicep' = {
  name: 'cosmos'
  scope: rg
  params: {
    name: names.cosmos
    location: location
    tags: tags
    databaseName: cosmosDatabaseName
    ordersContainerName: cosmosOrdersContainerName
    dataContributorPrincipalId: identity.outputs.principalId
  }
}

module monitoring 'core/monitor/monitoring.bicep' = {
  name: 'monitoring'
  scope: rg
  params: {
    logAnalyticsName: names.logAnalytics
    applicationInsightsName: names.appInsights
    location: location
    tags: tags
  }
}

module roleAssignment 'core/security/roleAssignment.bicep' = [
  for (assignment, i) in roleAssignments: if (assignment.principal == 'app' || !empty(principalId)) {
    name: 'role-${i}-${assignment.target}'
    scope: rg
    params: {
      target: assignment.target
      targetName: assignment.targetName
      roleDefinitionId: assignment.roleDefinitionId
      principalId: assignment.principal == 'app' ? identity.outputs.principalId : principalId
      principalType: assignment.principal == 'app' ? 'ServicePrincipal' : principalType
    }
    dependsOn: [
      storage
      serviceBus
      monitoring
    ]
  }
]

module api 'app/api.bicep' = {
  name: 'api'
  scope: rg
  params: {
    name: names.functionApp
    location: location
    tags: tags
    appServicePlanId: plan.outputs.resourceId
    identityId: identity.outputs.resourceId
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    deploymentStorageContainerName: deploymentStorageContainerName
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    serviceBusFullyQualifiedNamespace: serviceBus.outputs.fullyQualifiedNamespace
    cosmosEndpoint: cosmos.outputs.endpoint
    runtimeVersion: '22'
    durableTaskHubName: durableTaskHubName
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
      paymentsQueueName: paymentsQueueName
      ordersQueueName: ordersQueueName
    }
    cosmos: {
      databaseName: cosmosDatabaseName
      ordersContainerName: cosmosOrdersContainerName
    }
    paymentProvider: {
      url: paymentProviderUrl
      timeoutMs: paymentProviderTimeoutMs
    }
  }
  // The host starts as soon as the site exists: give it its data-plane roles first.
  dependsOn: [
    roleAssignment
  ]
}

module operations 'app/operations.bicep' = {
  name: 'operations'
  scope: rg
  params: {
    location: location
    tags: tags
    applicationInsightsName: monitoring.outputs.applicationInsightsName
    alertNamePrefix: names.alertPrefix
    duplicateRateThresholdPercent: duplicateRateAlertThresholdPercent
    duplicateRateMinClaims: duplicateRateAlertMinClaims
    actionGroupId: alertActionGroupId
  }
}

output AZURE_LOCATION string = location
output AZURE_TENANT_ID string = tenant().tenantId
output RESOURCE_GROUP string = rg.name
output SERVICE_API_NAME string = api.outputs.name
output AZURE_FUNCTION_NAME string = api.outputs.name
output SERVICEBUS_FULLY_QUALIFIED_NAMESPACE string = serviceBus.outputs.fullyQualifiedNamespace
output COSMOS_ENDPOINT string = cosmos.outputs.endpoint
output IDEMPOTENCY_TABLE_ENDPOINT string = storage.outputs.tableEndpoint
output IDEMPOTENCY_RETENTION_DAYS int = effectiveRetentionDays
output APPLICATIONINSIGHTS_CONNECTION_STRING string = monitoring.outputs.connectionString
