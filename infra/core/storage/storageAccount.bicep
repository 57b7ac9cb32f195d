metadata description = '''
Storage account for the Functions host (AzureWebJobsStorage: blobs, queues and tables for Durable Functions
with the Azure Storage provider), the Flex Consumption deployment container, and the idempotency store
(tables). Shared keys are disabled: every caller authenticates with Microsoft Entra ID.
'''

import { tagsType } from '../../types.bicep'

@description('Storage account name.')
param name string
@description('Location of the account.')
param location string = resourceGroup().location
@description('Tags applied to the account.')
param tags tagsType = {}

@description('Blob container Flex Consumption deploys the app package into.')
param deploymentContainerName string

@description('Tables to create (the dedup store and the parked-message table).')
param tableNames string[]

@description('Private deployment (vnetEnabled): public network access off, every request through the private endpoints (blob, queue, table).')
param privateNetworkOnly bool = false

@description('Zone redundancy (zoneRedundant): Standard_ZRS, three synchronous copies in three availability zones, instead of Standard_LRS. The idempotency records, the task hub and the deployment package live here.')
param zoneRedundant bool = false

@description('Log Analytics workspace the diagnostic settings send to.')
param logAnalyticsWorkspaceId string

// Microsoft.Storage/storageAccounts@2026-09-01
resource storage 'Microsoft.Storage/storageAccounts@2026-09-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: zoneRedundant ? 'Standard_ZRS' : 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    dnsEndpointType: 'Standard'
    minimumTlsVersion: 'TLS1_2'
    publicNetworkAccess: privateNetworkOnly ? 'Disabled' : 'Enabled'
    supportsHttpsTrafficOnly: true
    // Private: deny whatever does not come through a private endpoint. With public network access Disabled the bypass
    // for trusted Azure services changes nothing; it stays AzureServices (a scanner checks it, CKV_AZURE_36).
    networkAcls: privateNetworkOnly
      ? {
          defaultAction: 'Deny'
          bypass: 'AzureServices'
        }
      : {
          defaultAction: 'Allow'
          bypass: 'AzureServices'
        }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2026-09-01' = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2026-09-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2026-09-01' = {
  parent: storage
  name: 'default'
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2026-09-01' = {
  parent: storage
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2026-09-01' = [
  for tableName in tableNames: {
    parent: tableService
    name: tableName
  }
]

// Diagnostic settings (docs/deploy.md "Security review"): transaction metrics of the account and of each service; the
// request logs of the blob service's writes and deletes (the deployment package, the Event Hubs checkpoints: who changed
// what). No request logs for queues and tables, and no read logs: those would be one record per task hub and claim
// request (about 44 a payment, plus the idle polling), more than the rest of a payment's cost together (docs/deploy.md 10).
#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource accountDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: storage
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource blobDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: blobService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        category: 'StorageWrite'
        enabled: true
      }
      {
        category: 'StorageDelete'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource queueDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: queueService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource tableDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: tableService
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    metrics: [
      {
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

@description('Storage account name.')
output name string = storage.name
@description('Resource id of the storage account.')
output resourceId string = storage.id
@description('Blob service endpoint.')
output blobEndpoint string = storage.properties.primaryEndpoints.blob
@description('Queue service endpoint.')
output queueEndpoint string = storage.properties.primaryEndpoints.queue
@description('Table service endpoint.')
output tableEndpoint string = storage.properties.primaryEndpoints.table
