metadata description = '''
Cosmos DB for NoSQL, serverless, keys disabled (Microsoft Entra ID only). The orders container has
defaultTtl -1: TTL is on, nothing expires unless an item sets its own `ttl`. The idempotency container
(partition key /recordId, defaultTtl -1) holds the Cosmos idempotency store's records: each document sets its
own `ttl` (retention, or lease end when later, plus a margin), so the service expires them: no sweep. The data-plane role
(Cosmos DB Built-in Data Contributor) is a Cosmos SQL role assignment, not an Azure RBAC one.
'''

import { tagsType } from '../../types.bicep'

@description('Cosmos DB account name.')
param name string
@description('Location of the account.')
param location string = resourceGroup().location
@description('Tags applied to the account.')
param tags tagsType = {}
@description('SQL database name.')
param databaseName string
@description('Orders container name (partition key /orderId).')
param ordersContainerName string
@description('Idempotency records container name (partition key /recordId, TTL on; CosmosIdempotencyStore).')
param idempotencyContainerName string = 'idempotency'

@description('Object id of the identity that reads and writes items.')
param dataContributorPrincipalId string

@description('Private deployment (vnetEnabled): public network access off, the account reached through its private endpoint (Sql).')
param privateNetworkOnly bool = false

@description('Log Analytics workspace the account\'s control-plane log goes to.')
param logAnalyticsWorkspaceId string

// Cosmos DB Built-in Data Contributor (a Cosmos SQL role definition, fixed id in every account).
@description('Id of the Cosmos DB Built-in Data Contributor SQL role definition.')
var cosmosBuiltInDataContributorRoleId = '00000000-0000-0000-0000-000000000002'

// Microsoft.DocumentDB/databaseAccounts@2026-03-15
resource account 'Microsoft.DocumentDB/databaseAccounts@2026-03-15' = {
  name: name
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    disableLocalAuth: true
    // Keys are off anyway; this also refuses metadata writes (databases, containers) made with keys: only Azure
    // Resource Manager changes them.
    disableKeyBasedMetadataWriteAccess: true
    // One region, one write location (said explicitly).
    enableMultipleWriteLocations: false
    publicNetworkAccess: privateNetworkOnly ? 'Disabled' : 'Enabled'
    consistencyPolicy: {
      defaultConsistencyLevel: 'Session'
    }
    locations: [
      {
        locationName: location
        failoverPriority: 0
        isZoneRedundant: false
      }
    ]
    capabilities: [
      {
        name: 'EnableServerless'
      }
    ]
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2026-03-15' = {
  parent: account
  name: databaseName
  properties: {
    resource: {
      id: databaseName
    }
  }
}

resource ordersContainer 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2026-03-15' = {
  parent: database
  name: ordersContainerName
  properties: {
    resource: {
      id: ordersContainerName
      partitionKey: {
        paths: [
          '/orderId'
        ]
        kind: 'Hash'
      }
      defaultTtl: -1
      indexingPolicy: {
        automatic: true
        indexingMode: 'consistent'
        includedPaths: [
          {
            path: '/*'
          }
        ]
      }
    }
  }
}

// The Cosmos idempotency store's records: one logical partition per record (its marker and local rows share
// `recordId`, so they commit in one transactional batch); defaultTtl -1 turns TTL on and each document's own
// `ttl` decides its end. The store does point reads and writes only: no path is indexed (cheaper writes; a query scans).
resource idempotencyContainer 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2026-03-15' = {
  parent: database
  name: idempotencyContainerName
  properties: {
    resource: {
      id: idempotencyContainerName
      partitionKey: {
        paths: [
          '/recordId'
        ]
        kind: 'Hash'
      }
      defaultTtl: -1
      indexingPolicy: {
        automatic: true
        indexingMode: 'consistent'
        includedPaths: []
        excludedPaths: [
          {
            path: '/*'
          }
        ]
      }
    }
  }
}

resource dataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2026-03-15' = {
  parent: account
  name: guid(account.id, dataContributorPrincipalId, cosmosBuiltInDataContributorRoleId)
  properties: {
    principalId: dataContributorPrincipalId
    roleDefinitionId: '${account.id}/sqlRoleDefinitions/${cosmosBuiltInDataContributorRoleId}'
    scope: account.id
  }
}

// Control-plane operations (keys, network, containers changed: CDBControlPlaneRequests). Not DataPlaneRequests: one
// record per item read or write (the orders, and every claim with IDEMPOTENCY_STORE=cosmos), which the app's own
// telemetry already counts.
#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: account
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logAnalyticsDestinationType: 'Dedicated'
    logs: [
      {
        category: 'ControlPlaneRequests'
        enabled: true
      }
    ]
  }
}

@description('Cosmos DB account name.')
output name string = account.name
@description('Resource id of the account (its private endpoint).')
output resourceId string = account.id
@description('Cosmos DB account endpoint.')
output endpoint string = account.properties.documentEndpoint
