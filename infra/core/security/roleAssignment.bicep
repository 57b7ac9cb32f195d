metadata description = '''
The one reusable Azure RBAC role assignment. main.bicep loops it over a list of
{ target, targetName, roleDefinitionId } entries. The assignment name is
guid(scope.id, principalId, roleDefinitionId), so redeploying is idempotent.
Bicep needs a resource symbol as `scope`, hence one `existing` reference per supported target kind.
'''

@allowed([
  'storage'
  'serviceBus'
  'serviceBusQueue'
  'appInsights'
  'keyVault'
  'eventHub'
])
@description('Kind of resource the role is granted on.')
param target string

@description('Name of that resource (in this resource group); a queue as <namespace>/<queue>, an event hub as <namespace>/<hub>.')
param targetName string

@description('Built-in role definition GUID.')
param roleDefinitionId string

@description('Object id of the principal that gets the role.')
param principalId string

@allowed([
  'ServicePrincipal'
  'User'
  'Group'
])
@description('Type of that principal.')
param principalType string = 'ServicePrincipal'

@description('Resource id of the role definition.')
var roleId = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleDefinitionId)

resource storage 'Microsoft.Storage/storageAccounts@2026-09-01' existing = if (target == 'storage') {
  name: targetName
}

resource serviceBus 'Microsoft.ServiceBus/namespaces@2026-01-01' existing = if (target == 'serviceBus') {
  name: targetName
}

resource serviceBusQueue 'Microsoft.ServiceBus/namespaces/queues@2026-01-01' existing = if (target == 'serviceBusQueue') {
  name: targetName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = if (target == 'appInsights') {
  name: targetName
}

resource keyVault 'Microsoft.KeyVault/vaults@2025-05-01' existing = if (target == 'keyVault') {
  name: targetName
}

resource eventHub 'Microsoft.EventHub/namespaces/eventhubs@2026-01-01' existing = if (target == 'eventHub') {
  name: targetName
}

// Microsoft.Authorization/roleAssignments@2022-04-01
resource onStorage 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (target == 'storage') {
  name: guid(storage.id, principalId, roleDefinitionId)
  scope: storage
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: principalType
  }
}

resource onServiceBus 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (target == 'serviceBus') {
  name: guid(serviceBus.id, principalId, roleDefinitionId)
  scope: serviceBus
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: principalType
  }
}

resource onServiceBusQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (target == 'serviceBusQueue') {
  name: guid(serviceBusQueue.id, principalId, roleDefinitionId)
  scope: serviceBusQueue
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: principalType
  }
}

resource onAppInsights 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (target == 'appInsights') {
  name: guid(appInsights.id, principalId, roleDefinitionId)
  scope: appInsights
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: principalType
  }
}

resource onKeyVault 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (target == 'keyVault') {
  name: guid(keyVault.id, principalId, roleDefinitionId)
  scope: keyVault
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: principalType
  }
}

resource onEventHub 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (target == 'eventHub') {
  name: guid(eventHub.id, principalId, roleDefinitionId)
  scope: eventHub
  properties: {
    roleDefinitionId: roleId
    principalId: principalId
    principalType: principalType
  }
}
