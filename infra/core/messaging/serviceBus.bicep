metadata description = '''
Service Bus namespace (Standard or Premium: duplicate detection needs one of them) with SAS disabled, and one
queue per consumer (one per payment shard). Every queue gets the same delivery settings; the same parameter values are passed to the
app settings (SERVICEBUS_LOCK_DURATION_SECONDS, SERVICEBUS_MAX_DELIVERY_COUNT, SERVICEBUS_MESSAGE_TTL_SECONDS)
so the idempotency retention rule is computed from what the broker really does.
'''

import { tagsType } from '../../types.bicep'

@description('Service Bus namespace name.')
param name string
@description('Location of the namespace.')
param location string = resourceGroup().location
@description('Tags applied to the namespace.')
param tags tagsType = {}

@description('Queue names, one per consumer.')
param queueNames string[]

@minValue(5)
@maxValue(300)
@description('Peek-lock duration in seconds (Service Bus allows at most 5 minutes).')
param lockDurationSeconds int

@minValue(1)
@description('Deliveries before the broker dead-letters a message.')
param maxDeliveryCount int

@minValue(1)
@description('Default message time-to-live in days.')
param messageTtlDays int

@description('ISO 8601 window of broker-side duplicate detection on MessageId.')
param duplicateDetectionHistoryTimeWindow string = 'PT10M'

@description('Premium (messaging units) instead of Standard: Standard allows about 1,000 credits a second per namespace, one per message sent or received (learn.microsoft.com/azure/service-bus-messaging/service-bus-throttling); private endpoints need Premium.')
param premium bool = false

@allowed([
  1
  2
  4
  8
  16
  32
  64
])
@description('Messaging units of a Premium namespace (ignored on Standard): 1-16 on one messaging partition; 32 and 64 need 4 partitions ("valid capacities are {1, 2, 4, 8, 16} multiples of premiumMessagingPartitions", learn.microsoft.com/dotnet/api/azure.resourcemanager.servicebus.models.servicebussku.capacity).')
param messagingUnits int = 1

@description('Zone redundancy (zoneRedundant): the namespace spread over the region\'s availability zones (needs premium; learn.microsoft.com/azure/reliability/reliability-service-bus).')
param zoneRedundant bool = false

@description('Private deployment (vnetEnabled): public network access off (needs premium).')
param privateNetworkOnly bool = false

@description('Log Analytics workspace the namespace\'s audit logs and metrics go to.')
param logAnalyticsWorkspaceId string

// Microsoft.ServiceBus/namespaces@2026-01-01
resource namespace 'Microsoft.ServiceBus/namespaces@2026-01-01' = {
  name: name
  location: location
  tags: tags
  // Private endpoints are a Premium feature (learn.microsoft.com/azure/service-bus-messaging/private-link-service):
  // the private deployment pays for messaging units instead of Standard's base charge (docs/deploy.md).
  sku: premium
    ? {
        name: 'Premium'
        tier: 'Premium'
        capacity: messagingUnits
      }
    : {
        name: 'Standard'
        tier: 'Standard'
      }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: privateNetworkOnly ? 'Disabled' : 'Enabled'
    zoneRedundant: premium && zoneRedundant
    // Messaging partitions are chosen when the namespace is created; only past 16 units does it need 4.
    premiumMessagingPartitions: premium ? (messagingUnits > 16 ? 4 : 1) : null
  }
}

// The audit category group: management operations (AZMSOperationalLogs), network filtering events and, on Premium,
// the data-plane runtime audit logs (aggregated per minute).
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

// Microsoft.ServiceBus/namespaces/queues@2026-01-01
resource queues 'Microsoft.ServiceBus/namespaces/queues@2026-01-01' = [
  for queueName in queueNames: {
    parent: namespace
    name: queueName
    properties: {
      requiresDuplicateDetection: true
      duplicateDetectionHistoryTimeWindow: duplicateDetectionHistoryTimeWindow
      lockDuration: 'PT${lockDurationSeconds}S'
      maxDeliveryCount: maxDeliveryCount
      deadLetteringOnMessageExpiration: true
      defaultMessageTimeToLive: 'P${messageTtlDays}D'
      requiresSession: false
      enablePartitioning: false
    }
  }
]

@description('Namespace name.')
output name string = namespace.name
@description('Resource id of the namespace.')
output resourceId string = namespace.id
// e.g. sb-abc.servicebus.windows.net: the host name the identity-based connection wants.
@description('Host name of the namespace, for identity-based connections.')
output fullyQualifiedNamespace string = '${namespace.name}.servicebus.windows.net'
