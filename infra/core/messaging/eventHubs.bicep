metadata description = '''
Event Hubs namespace (Standard: consumer groups beyond $Default need Standard or above) with local auth
(SAS) disabled and TLS 1.2 at least, one hub and the consumer group of its one consumer. Checkpoints and
partition ownership live in the Functions host's storage (AzureWebJobsStorage, container
azure-webjobs-eventhub), not here.
'''

import { tagsType } from '../../types.bicep'

@description('Event Hubs namespace name.')
param name string
@description('Location of the namespace.')
param location string = resourceGroup().location
@description('Tags applied to the namespace.')
param tags tagsType = {}

@description('Event hub name.')
param hubName string

@minValue(1)
@maxValue(32)
@description('Partitions of the hub (fixed at creation on Standard): the most instances that consume it at once.')
param partitionCount int = 4

@minValue(1)
@maxValue(7)
@description('Days an event is kept (Standard: at most 7). Rewards markers must outlive this for a replay to find them (REWARDS_MARKER_RETENTION_DAYS).')
param retentionDays int = 7

@description('Consumer group of the consumer (its own checkpoints).')
param consumerGroupName string

@description('Private deployment (vnetEnabled): public network access off, the namespace reached through its private endpoint (Standard supports private endpoints).')
param privateNetworkOnly bool = false

@description('Log Analytics workspace the namespace\'s audit logs and metrics go to.')
param logAnalyticsWorkspaceId string

@allowed([
  'Delete'
  'Compact'
])
@description('Cleanup policy: Delete drops events after the retention; Compact keeps the latest event per key without a time limit (the rewards consumer refuses to start on it: REWARDS_EVENT_HUB_CLEANUP_POLICY).')
param cleanupPolicy string = 'Delete'

// Microsoft.EventHub/namespaces@2026-01-01
resource namespace 'Microsoft.EventHub/namespaces@2026-01-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: 'Standard'
    tier: 'Standard'
    capacity: 1
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: privateNetworkOnly ? 'Disabled' : 'Enabled'
    isAutoInflateEnabled: false
  }
}

#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: namespace
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logAnalyticsDestinationType: 'Dedicated'
    logs: [
      {
        categoryGroup: 'audit'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

// Microsoft.EventHub/namespaces/eventhubs@2026-01-01
resource hub 'Microsoft.EventHub/namespaces/eventhubs@2026-01-01' = {
  parent: namespace
  name: hubName
  properties: {
    partitionCount: partitionCount
    retentionDescription: {
      cleanupPolicy: cleanupPolicy
      retentionTimeInHours: retentionDays * 24
    }
  }
}

// Microsoft.EventHub/namespaces/eventhubs/consumergroups@2026-01-01
resource consumerGroup 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2026-01-01' = {
  parent: hub
  name: consumerGroupName
}

@description('Namespace name.')
output name string = namespace.name
@description('Resource id of the namespace (its private endpoint).')
output resourceId string = namespace.id
@description('The hub as <namespace>/<hub>, for role assignments scoped to it.')
output hubResourceName string = '${namespace.name}/${hub.name}'
@description('Consumer group name.')
output consumerGroupName string = consumerGroup.name
// e.g. evhns-abc.servicebus.windows.net: the host name the identity-based connection wants.
@description('Host name of the namespace, for identity-based connections.')
output fullyQualifiedNamespace string = '${namespace.name}.servicebus.windows.net'