metadata description = '''
One metric alert per Service Bus queue on its dead-letter count (platform metric DeadletteredMessages, split by
dimension EntityName = the queue; learn.microsoft.com/azure/service-bus-messaging/monitor-service-bus-reference).
The broker dead-letters a message after maxDeliveryCount deliveries or when its time-to-live expires; the app's own
"parked" messages are a different count (workbook "Parked / dead-lettered messages"). Any message in a dead-letter
queue waits for an operator, so the alert fires on more than zero and resolves when the queue is emptied.
'''

import { tagsType } from '../types.bicep'

@description('Tags applied to the alert rules.')
param tags tagsType = {}
@description('Service Bus namespace whose queues are watched.')
param serviceBusNamespaceName string
@description('Every queue of the namespace: one alert each.')
param queueNames string[]
@description('Prefix for alert rule names, e.g. alert-<resourceToken>.')
param alertNamePrefix string
@description('Optional action group resource id notified by the alerts (empty: alerts only show in the portal).')
param actionGroupId string = ''

resource namespace 'Microsoft.ServiceBus/namespaces@2026-01-01' existing = {
  name: serviceBusNamespaceName
}

@description('Alert actions: the action group when actionGroupId is set, none otherwise.')
var actions = empty(actionGroupId)
  ? []
  : [
      {
        actionGroupId: actionGroupId
      }
    ]

// Microsoft.Insights/metricAlerts@2026-01-01
resource deadLetterAlerts 'Microsoft.Insights/metricAlerts@2026-01-01' = [
  for queueName in queueNames: {
    name: '${alertNamePrefix}-dead-lettered-${queueName}'
    location: 'global'
    tags: tags
    properties: {
      description: 'Messages in the dead-letter queue of ${queueName}: delivered maxDeliveryCount times without completing, or expired. Read them (Service Bus Explorer, or npm run payments:retry for payments), fix the cause, resubmit or delete them within DLQ_RESUBMIT_MARGIN_DAYS.'
      severity: 2
      enabled: true
      scopes: [
        namespace.id
      ]
      evaluationFrequency: 'PT5M'
      windowSize: 'PT5M'
      criteria: {
        'odata.type': 'Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria'
        allOf: [
          {
            criterionType: 'StaticThresholdCriterion'
            name: 'dead-lettered'
            metricNamespace: 'Microsoft.ServiceBus/namespaces'
            metricName: 'DeadletteredMessages'
            dimensions: [
              {
                name: 'EntityName'
                operator: 'Include'
                values: [
                  queueName
                ]
              }
            ]
            operator: 'GreaterThan'
            threshold: 0
            timeAggregation: 'Maximum'
          }
        ]
      }
      autoMitigate: true
      actions: actions
    }
  }
]

@description('Names of the alert rules, one per queue.')
output alertNames string[] = [for (queueName, i) in queueNames: deadLetterAlerts[i].name]
