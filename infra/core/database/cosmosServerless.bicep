metadata description = '''
Cosmos DB for NoSQL, serverless, keys disabled (Microsoft Entra ID only). The orders container has
defaultTtl -1: TTL is on, nothing expires unless an item sets its own `ttl`. The data-plane role
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

@description('Object id of the identity that reads and writes items.')
param dataContributorPrincipalId string

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
    publicNetworkAccess: 'Enabled'
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

resource dataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2026-03-15' = {
  parent: account
  name: guid(account.id, dataContributorPrincipalId, cosmosBuiltInDataContributorRoleId)
  properties: {
    principalId: dataContributorPrincipalId
    roleDefinitionId: '${account.id}/sqlRoleDefinitions/${cosmosBuiltInDataContributorRoleId}'
    scope: account.id
  }
}

@description('Cosmos DB account name.')
output name string = account.name
@description('Cosmos DB account endpoint.')
output endpoint string = account.properties.documentEndpoint
