metadata description = '''
Log Analytics workspace and a workspace-based Application Insights component with local (instrumentation
key) authentication disabled: telemetry is accepted only with a Microsoft Entra token, which is why the
identity gets Monitoring Metrics Publisher and the app sets APPLICATIONINSIGHTS_AUTHENTICATION_STRING.
'''

import { tagsType } from '../../types.bicep'

@description('Log Analytics workspace name.')
param logAnalyticsName string
@description('Application Insights component name.')
param applicationInsightsName string
@description('Location of the workspace and the component.')
param location string = resourceGroup().location
@description('Tags applied to the workspace and the component.')
param tags tagsType = {}

@minValue(30)
@description('Log Analytics data retention in days.')
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

@description('Application Insights component name.')
output applicationInsightsName string = appInsights.name
@description('Resource id of the Application Insights component.')
output applicationInsightsId string = appInsights.id
@description('Resource id of the Log Analytics workspace.')
output logAnalyticsId string = workspace.id
