metadata description = '''
Log Analytics workspace and a workspace-based Application Insights component with local (instrumentation
key) authentication disabled: telemetry is accepted only with a Microsoft Entra token, which is why the
identity gets Monitoring Metrics Publisher and the app sets APPLICATIONINSIGHTS_AUTHENTICATION_STRING.
'''

import { tagsType } from '../../types.bicep'

param logAnalyticsName string
param applicationInsightsName string
param location string = resourceGroup().location
param tags tagsType = {}

@minValue(30)
param retentionInDays int = 30

// Microsoft.OperationalInsights/workspaces@2026-03-01
resource workspace 'Microsoft.OperationalInsights/workspaces@2026-03-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
  }
}

// Microsoft.Insights/components@2020-02-02
resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    DisableLocalAuth: true
    publicNetworkAccessForIngestion: 'Enabled'
    publicNetworkAccessForQuery: 'Enabled'
  }
}

output applicationInsightsName string = appInsights.name
output applicationInsightsId string = appInsights.id
// The connection string carries no secret once local auth is disabled; ingestion needs an Entra token.
output connectionString string = appInsights.properties.ConnectionString
output logAnalyticsId string = workspace.id
