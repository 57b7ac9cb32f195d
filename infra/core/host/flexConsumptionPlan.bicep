metadata description = 'Flex Consumption (FC1) plan for the Function App. Linux only, hence reserved: true.'

import { tagsType } from '../../types.bicep'

@description('Plan name.')
param name string
@description('Location of the plan.')
param location string = resourceGroup().location
@description('Tags applied to the plan.')
param tags tagsType = {}
@description('Zone redundancy (zoneRedundant): instances spread over the region\'s availability zones; the platform then keeps at least two always-ready instances for every function group (docs/deploy.md).')
param zoneRedundant bool = false

// Microsoft.Web/serverfarms@2025-03-01
resource plan 'Microsoft.Web/serverfarms@2025-03-01' = {
  name: name
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true
    zoneRedundant: zoneRedundant
  }
}

@description('Resource id of the plan.')
output resourceId string = plan.id
@description('Plan name.')
output name string = plan.name
