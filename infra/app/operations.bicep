metadata description = '''
Operations for the idempotent consumers: a workbook and log alert rules on Application Insights.
The KQL lives in infra/monitoring/queries/*.kql and is loaded here with loadTextContent, so the files an
operator runs by hand and the queries deployed are the same text.
'''

import { tagsType } from '../types.bicep'

@description('Location of the workbook and alert rules.')
param location string = resourceGroup().location
@description('Tags applied to the workbook and alert rules.')
param tags tagsType = {}
@description('Application Insights component the workbook and alerts query.')
param applicationInsightsName string

@description('Prefix for alert rule names, e.g. alert-<resourceToken>.')
param alertNamePrefix string

@minValue(1)
@maxValue(100)
@description('Duplicate rate (percent of claim attempts, per consumer, over the window) above which the alert fires.')
param duplicateRateThresholdPercent int = 5

@minValue(1)
@description('Claim attempts a consumer needs in the window before its duplicate rate can fire the alert.')
param duplicateRateMinClaims int = 50

@minValue(1)
@description('Store-outage waits of a consumer in 5 minutes above which the store-outage alert fires (one delivery waits up to ~15 times).')
param storeOutageWaitsThreshold int = 10

@description('Optional action group resource id notified by the alerts (empty: alerts only show in the portal).')
param actionGroupId string = ''

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

@description('KQL of every file in infra/monitoring/queries, by name.')
var queries = {
  duplicateRate: loadTextContent('../monitoring/queries/duplicate-rate.kql')
  duplicateReasons: loadTextContent('../monitoring/queries/duplicate-reasons.kql')
  keyReuse: loadTextContent('../monitoring/queries/key-reuse.kql')
  keyReuseDetails: loadTextContent('../monitoring/queries/key-reuse-details.kql')
  stuckInProgress: loadTextContent('../monitoring/queries/stuck-in-progress.kql')
  inProgressAndTakeovers: loadTextContent('../monitoring/queries/in-progress-and-takeovers.kql')
  parkedMessages: loadTextContent('../monitoring/queries/parked-messages.kql')
  parkedMessageDetails: loadTextContent('../monitoring/queries/parked-message-details.kql')
  expirySweep: loadTextContent('../monitoring/queries/expiry-sweep.kql')
  providerLatency: loadTextContent('../monitoring/queries/provider-latency.kql')
  alertDuplicateRate: loadTextContent('../monitoring/queries/alert-duplicate-rate.kql')
  alertKeyReuse: loadTextContent('../monitoring/queries/alert-key-reuse.kql')
  httpReplayRate: loadTextContent('../monitoring/queries/http-replay-rate.kql')
  httpConflicts: loadTextContent('../monitoring/queries/http-conflicts.kql')
  webhookSignatureFailures: loadTextContent('../monitoring/queries/webhook-signature-failures.kql')
  alertPaymentsFailed: loadTextContent('../monitoring/queries/alert-payments-failed.kql')
  alertPaymentsHeld: loadTextContent('../monitoring/queries/alert-payments-held.kql')
  alertProviderRefused: loadTextContent('../monitoring/queries/alert-provider-refused.kql')
  alertChargedAfterSettle: loadTextContent('../monitoring/queries/alert-charged-after-settle.kql')
  alertProviderLookupUnsupported: loadTextContent('../monitoring/queries/alert-provider-lookup-unsupported.kql')
  alertPaymentsLedgerDiscrepancy: loadTextContent('../monitoring/queries/alert-payments-ledger-discrepancy.kql')
  alertStoreOutage: loadTextContent('../monitoring/queries/alert-store-outage.kql')
  paymentsFailedDetails: loadTextContent('../monitoring/queries/payments-failed-details.kql')
  alertPaymentsReconciled: loadTextContent('../monitoring/queries/alert-payments-reconciled.kql')
  alertPaymentsRunStuck: loadTextContent('../monitoring/queries/alert-payments-run-stuck.kql')
  alertRecordWriteRefused: loadTextContent('../monitoring/queries/alert-record-write-refused.kql')
  alertPaymentsShardLayout: loadTextContent('../monitoring/queries/alert-payments-shard-layout.kql')
  alertReconcilerIncomplete: loadTextContent('../monitoring/queries/alert-reconciler-incomplete.kql')
  alertPaymentsOldestInProgress: loadTextContent('../monitoring/queries/alert-payments-oldest-in-progress.kql')
  alertExpiryTimerFailing: loadTextContent('../monitoring/queries/alert-expiry-timer-failing.kql')
  alertLedgerCheckFailing: loadTextContent('../monitoring/queries/alert-ledger-check-failing.kql')
  streamReplays: loadTextContent('../monitoring/queries/stream-replays.kql')
  streamParkedEvents: loadTextContent('../monitoring/queries/stream-parked-events.kql')
  alertStreamStalled: loadTextContent('../monitoring/queries/alert-stream-stalled.kql')
  alertStreamMisconfigured: loadTextContent('../monitoring/queries/alert-stream-misconfigured.kql')
}

// One workbook tile: a KQL query against this Application Insights component.
@description('Workbook tiles: title, query and visualization.')
var panels = [
  {
    title: 'Duplicate rate by consumer (%)'
    query: '${queries.duplicateRate}\n| project timestamp, consumer, duplicateRatePercent'
    visualization: 'timechart'
  }
  {
    title: 'Duplicates by consumer and reason'
    query: queries.duplicateReasons
    visualization: 'barchart'
  }
  {
    title: 'Key-reuse conflicts by consumer'
    query: queries.keyReuse
    visualization: 'timechart'
  }
  {
    title: 'Key-reuse conflicts (details)'
    query: queries.keyReuseDetails
    visualization: 'table'
  }
  {
    title: 'Records stuck in progress'
    query: queries.stuckInProgress
    visualization: 'table'
  }
  {
    title: 'In-progress answers and lease takeovers'
    query: queries.inProgressAndTakeovers
    visualization: 'timechart'
  }
  {
    title: 'Parked / dead-lettered messages by consumer and reason'
    query: queries.parkedMessages
    visualization: 'barchart'
  }
  {
    title: 'Parked messages (details)'
    query: queries.parkedMessageDetails
    visualization: 'table'
  }
  {
    title: 'Expiry sweep: scanned, deleted, skipped'
    query: queries.expirySweep
    visualization: 'timechart'
  }
  {
    title: 'Payment provider latency (ms)'
    query: queries.providerLatency
    visualization: 'timechart'
  }
  {
    title: 'HTTP replay rate by endpoint (%)'
    query: queries.httpReplayRate
    visualization: 'timechart'
  }
  {
    title: 'HTTP 409 (in flight) and 422 (key reused) by endpoint and caller'
    query: queries.httpConflicts
    visualization: 'table'
  }
  {
    title: 'Webhook signature failures'
    query: queries.webhookSignatureFailures
    visualization: 'table'
  }
  {
    title: 'Payments failed after the retry budget (retry with npm run payments:retry)'
    query: queries.paymentsFailedDetails
    visualization: 'table'
  }
  {
    title: 'Event Hubs: duplicates replayed after a checkpoint and producer resends, by partition (hourly)'
    query: queries.streamReplays
    visualization: 'table'
  }
  {
    title: 'Event Hubs: events parked in a batch, by partition and reason (hourly)'
    query: queries.streamParkedEvents
    visualization: 'table'
  }
]

// One KqlItem per panel (a top-level for-expression: Bicep allows loops only as a declaration's value).
@description('Workbook KqlItem of each panel.')
var panelItems = [
  for (panel, i) in panels: {
    type: 3
    name: 'query-${i}'
    content: {
      version: 'KqlItem/1.0'
      title: panel.title
      query: panel.query
      size: 0
      timeContext: {
        durationMs: 86400000
      }
      queryType: 0
      resourceType: 'microsoft.insights/components'
      visualization: panel.visualization
    }
  }
]

@description('Workbook header text.')
var headerItem = {
  type: 1
  name: 'header'
  content: {
    json: '## Idempotent consumers\nDuplicates, key reuse, stuck claims, parked messages and the expiry sweep. Queries: `infra/monitoring/queries/*.kql`.'
  }
}

@description('Workbook definition (Notebook/1.0), serialized into serializedData.')
var workbookContent = {
  version: 'Notebook/1.0'
  items: concat([headerItem], panelItems)
  fallbackResourceIds: [
    appInsights.id
  ]
}

// Microsoft.Insights/workbooks@2023-06-01 (name must be a GUID; kind 'shared')
resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, appInsights.id, 'idempotency-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'Idempotent consumers'
    category: 'workbook'
    sourceId: appInsights.id
    serializedData: string(workbookContent)
    version: 'Notebook/1.0'
  }
}

@description('Alert actions: the action group when actionGroupId is set, none otherwise.')
var actions = empty(actionGroupId) ? {} : {
  actionGroups: [
    actionGroupId
  ]
}

// Microsoft.Insights/scheduledQueryRules@2026-03-01 (log alert, kind LogAlert)
resource keyReuseAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-idempotency-key-reuse'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Idempotency key reused with a different payload'
    description: 'A producer sent another payload under an idempotency key already used. Any occurrence is a bug upstream: see the workbook "Key-reuse conflicts (details)".'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertKeyReuse
          timeAggregation: 'Total'
          metricMeasureColumn: 'conflicts'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Handoff design: a payment whose transient provider failures outlasted PAYMENT_RETRY_BUDGET_MINUTES ended failed.
resource paymentsFailedAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-failed'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment failed after its retry budget'
    description: 'A payment ended failed: the provider failed transiently for the whole PAYMENT_RETRY_BUDGET_MINUTES. It is not lost (record and Payment row say failed, with the reason); retry it with npm run payments:retry -- --payment-id <id> (workbook "Payments failed after the retry budget").'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsFailed
          timeAggregation: 'Total'
          metricMeasureColumn: 'failed'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Event Hubs: a partition whose batches keep throwing (retried forever) does not move: visible within half an hour.
resource streamStalledAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-stream-stalled'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Event Hubs partition not moving (batches failing)'
    description: 'A stream consumer keeps throwing the batch of one partition: the trigger retries it forever and the partition does not move. A store outage (kind unavailable) heals by itself; any other failure parks its event after 3 strikes (reason repeated-failure). See the workbook "Event Hubs: events parked in a batch" and the Functions logs of the partition.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT15M'
    windowSize: 'PT30M'
    criteria: {
      allOf: [
        {
          query: queries.alertStreamStalled
          timeAggregation: 'Total'
          metricMeasureColumn: 'failures'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'partitionId'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 3
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Event Hubs: a table the consumer cannot use (403, 404 TableNotFound, 409 TableBeingDeleted) stopped a partition; named in the alert.
resource streamMisconfiguredAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-stream-misconfigured'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Event Hubs partition stopped: a table cannot be used'
    description: 'A stream consumer stopped a partition because a table answered 401/403 (role not yet propagated, firewall), 404 TableNotFound or 409 TableBeingDeleted. Nothing is parked and nothing is checkpointed: fix the table or the role (dimensions tableName, status, code) and the partition goes on where it stopped.'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: queries.alertStreamMisconfigured
          timeAggregation: 'Total'
          metricMeasureColumn: 'stoppedBatches'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'tableName'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'status'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'code'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Handoff design: the reconciler restarted a payment whose run ended without completing its record (expiry timer, each tick).
resource paymentsReconciledAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-reconciled'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment run ended without its record (reconciled)'
    description: 'The expiry timer found a payment in progress whose chargePayment run had failed, been terminated or gone, and restarted it under a takeover (inside the provider\'s key memory it re-sends the same key; past it, it looks the charge up or holds the payment for an operator: never a blind charge). The payment is not lost; the run ending is a bug or an operator action: read the traces with outcome reconciled (paymentId, reason) and the failed run\'s output. Reason run-superseded (a run fenced after a duplicate start) is routine and not alerted.'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsReconciled
          timeAggregation: 'Total'
          metricMeasureColumn: 'reconciled'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'reason'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// A payment in progress for hours whose run is still Running, Pending or Suspended (the reconciler, each tick).
resource paymentsRunStuckAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-run-stuck'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment run going on for hours (stuck or suspended)'
    description: 'A payment has been in progress for more than 2 hours while its chargePayment run is still Running, Pending or Suspended: a run suspended and forgotten, a record write retried for hours, queues backed up. It is not taken over (the run can still act) and its record is kept alive. Read the traces with outcome run-stuck (paymentId, run state): resume a suspended run, or terminate it (the reconciler then takes it over and looks before any charge).'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsRunStuck
          timeAggregation: 'Total'
          metricMeasureColumn: 'stuck'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'run'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Sharded: a shard's table holds a live payment record another shard owns (N changed without the record migration).
resource paymentsShardLayoutAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-shard-layout'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payments shard refuses its layout (records not migrated)'
    description: 'A payments shard found in its table a live payment record that another shard owns under PAYMENT_SHARD_COUNT: the shard count changed without the record migration (or PAYMENT_SHARD_INDEX is wrong). The shard claims no payment: each delivery waits and is abandoned (dead-lettered after maxDeliveryCount). Check the shard settings; run npm run payments:reshard (plan, then --apply: docs/deploy.md section 11); the shard goes on by itself within a minute. Read the traces with outcome layout-refused (paymentId, ownerShard, shard).'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsShardLayout
          timeAggregation: 'Total'
          metricMeasureColumn: 'refused'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'shard'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// The run's record write refused by the store (403, 404, 400): the customer may be charged; no wait fixes it.
resource recordWriteRefusedAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-record-write-refused'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment record write refused by the store'
    description: 'A charge run could not write its payment record: the table answered 403 (a role assignment or a firewall), 404 (the table is gone) or 400 (a bug). The customer may already be charged; the run keeps retrying the write on durable timers and lands it once the store is fixed. Fix the access or the table; read the traces with outcome record-write-refused (paymentId, statusCode).'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: queries.alertRecordWriteRefused
          timeAggregation: 'Total'
          metricMeasureColumn: 'refused'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'statusCode'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// The payments reconciler ran out of its budget before reading every in-progress record, tick after tick.
resource reconcilerIncompleteAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-reconciler-incomplete'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payments reconciler does not finish its pass'
    description: 'The expiry timer\'s payments reconciler stopped at its budget before it read every payment in progress, in most ticks of the last hour: a backlog of in-progress payments (an outage, a stuck task hub). Each tick resumes where the last stopped, but resolution slows; raise EXPIRY_SWEEP_BUDGET_SECONDS or find why so many payments stay in progress.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT1H'
    criteria: {
      allOf: [
        {
          query: queries.alertReconcilerIncomplete
          timeAggregation: 'Total'
          metricMeasureColumn: 'incomplete'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 2
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// The oldest payment still in progress past its lease and grace (the reconciler, each pass): one number for all.
resource paymentsOldestInProgressAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-oldest-in-progress'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'A payment in progress for more than 6 hours'
    description: 'The oldest payment the reconciler found still in progress (past its lease and a 5 minute grace) was claimed more than 6 hours ago: neither its run nor the reconciler has settled it (a record write refused for hours, a suspended run, a backlog the passes do not reach). Read the traces with outcome run-stuck, record-write-refused and reconcile-incomplete; the metric payments.in_progress.oldest_minutes (one value a pass) shows the trend.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT15M'
    windowSize: 'PT30M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsOldestInProgress
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'oldestMinutes'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 360
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// The expiry timer failing tick after tick: the sweep, the reconciler and the purge are not running.
resource expiryTimerFailingAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-expiry-timer-failing'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Expiry timer failing (no sweep, reconciler or purge)'
    description: 'The expiryTimer function failed more than twice in the last hour (it runs every 15 minutes): records past retention are not swept, payments whose run ended are not reconciled, the task hub is not purged. Read the traces starting expiry sweep failed and the function\'s exceptions: a store or task hub refusing the app\'s identity (403), a table gone (404), an outage.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT15M'
    windowSize: 'PT1H'
    criteria: {
      allOf: [
        {
          query: queries.alertExpiryTimerFailing
          timeAggregation: 'Total'
          metricMeasureColumn: 'failures'
          operator: 'GreaterThan'
          threshold: 2
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// The ledger check failing tick after tick: the check under every guard is blind (a guard that can fail needs a check).
resource ledgerCheckFailingAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-ledger-check-failing'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Ledger check failing (no provider charge is being matched to its record)'
    description: 'The ledgerCheck function failed more than 6 times in the last hour (it runs every 5 minutes): the provider\'s charges are not matched to their records, so a charge no record holds would go unseen. Read the traces starting payments ledger check failed and the function\'s exceptions: the provider refusing the list (401 a rotated secret, 403), a provider without a list (set PAYMENT_PROVIDER_LEDGER=none), the table refusing the app\'s identity (403). The checkpoint waits: once fixed, the next ticks check the charges missed.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT15M'
    windowSize: 'PT1H'
    criteria: {
      allOf: [
        {
          query: queries.alertLedgerCheckFailing
          timeAggregation: 'Total'
          metricMeasureColumn: 'failures'
          operator: 'GreaterThan'
          threshold: 6
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

resource duplicateRateAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-idempotency-duplicate-rate'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Idempotency duplicate rate above ${duplicateRateThresholdPercent}%'
    description: 'More than ${duplicateRateThresholdPercent}% of claim attempts of a consumer (at least ${duplicateRateMinClaims} attempts in 15 minutes) were duplicates: redelivery storm, lock too short, or a producer resending.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: '${queries.alertDuplicateRate}\n| where claims >= ${duplicateRateMinClaims}'
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'duplicateRatePercent'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: duplicateRateThresholdPercent
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Issue 34: what the provider cannot decide is held, a look-up it does not offer is a configuration error, and a
// storage outage is waited out inside the deliveries: each one an alert, not a silent stall or a full dead-letter queue.
resource paymentsHeldAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-held'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment held for an operator'
    description: 'A provider call that may have charged could be checked neither by the provider key memory (PAYMENT_PROVIDER_KEY_MEMORY_HOURS) nor by a look-up (PAYMENT_PROVIDER_LOOKUP): the payment was not charged blind; its record and Payment row say failed, held for an operator, with the reason. Check the charge at the provider, then npm run payments:retry -- --payment-id <id>.'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsHeld
          timeAggregation: 'Total'
          metricMeasureColumn: 'held'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// A negative result only on the provider's word: answers from a layer before its idempotency are retried, counted and
// paged (a 401 wave after a secret rotation stops every payment); a success that meets a settled record is the money
// invariant broken, paged at once with the key and charge id in the log.
resource providerRefusedAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-provider-refused'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Provider answers that are not its word (401/403/404/429)'
    description: 'The payment provider answered from a layer before its idempotency (401 a rotated or wrong secret, 403, 404 a wrong URL or proxy, 405, 429, a 400 or 422 without its error body). Not a result: the runs retry within their budget, then settle by look-up or hold. Fix the secret or the URL (PAYMENT_PROVIDER_URL); by statusCode.'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertProviderRefused
          timeAggregation: 'Total'
          metricMeasureColumn: 'refused'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
            {
              name: 'statusCode'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

resource chargedAfterSettleAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-charged-after-settle'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Customer charged after the record settled otherwise'
    description: 'A provider call answered succeeded after the payment record was settled failed, declined or rejected (or another charge, or a later generation): the customer is charged and the record says not. The error log (outcome charged-after-settle) names the key and the charge id: check the charge at the provider, refund it or correct the record.'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertChargedAfterSettle
          timeAggregation: 'Total'
          metricMeasureColumn: 'charged'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

// Issue 62 item 4: the ledger check under every guard. A charge the provider made that no record holds as succeeded
// with that charge is money taken that the app does not account for: sev 1, whatever the reason.
resource paymentsLedgerDiscrepancyAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-payments-ledger-discrepancy'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment ledger discrepancy (a provider charge no record holds)'
    description: 'The ledger check found a charge at the provider whose payments record is missing, completed otherwise (failed, declined, rejected, held), holds another charge, or stayed undecided past the grace. List them with npm run keys -- ledger; check each charge at the provider, then refund it or correct the record (docs/deploy.md runbook).'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: queries.alertPaymentsLedgerDiscrepancy
          timeAggregation: 'Total'
          metricMeasureColumn: 'discrepancies'
          dimensions: [
            {
              name: 'reason'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

resource providerLookupUnsupportedAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-provider-lookup-unsupported'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Payment provider look-up not offered (configuration)'
    description: 'The provider answered 400/404/405/501 to a charge look-up: PAYMENT_PROVIDER_LOOKUP declares a look-up it does not offer. Not retried; each payment that needed it is held. Set PAYMENT_PROVIDER_LOOKUP to what the provider offers (none for Stripe).'
    severity: 1
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertProviderLookupUnsupported
          timeAggregation: 'Total'
          metricMeasureColumn: 'unsupported'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

resource storeOutageAlert 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = {
  name: '${alertNamePrefix}-store-outage'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Store outage: deliveries waiting for the store'
    description: 'Deliveries of a consumer are waiting inside their invocations for the idempotency store to answer (its lock renewed by the host): a storage outage in progress. Messages are kept; they reach the dead-letter queue only if the outage outlasts maxDeliveryCount x about 4 minutes.'
    severity: 2
    enabled: true
    scopes: [
      appInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: queries.alertStoreOutage
          timeAggregation: 'Total'
          metricMeasureColumn: 'waits'
          dimensions: [
            {
              name: 'consumer'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: storeOutageWaitsThreshold
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: actions
  }
}

@description('Resource id of the workbook.')
output workbookId string = workbook.id
