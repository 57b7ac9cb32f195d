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

// Microsoft.Storage/storageAccounts@2026-09-01
resource storage 'Microsoft.Storage/storageAccounts@2026-09-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    dnsEndpointType: 'Standard'
    minimumTlsVersion: 'TLS1_2'
    publicNetworkAccess: 'Enabled'
    supportsHttpsTrafficOnly: true
    networkAcls: {
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

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2026-09-01' = [
  for tableName in tableNames: {
    parent: tableService
    name: tableName
  }
]

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
