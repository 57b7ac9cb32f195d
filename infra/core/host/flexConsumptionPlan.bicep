metadata description = 'Flex Consumption (FC1) plan for the Function App. Linux only, hence reserved: true.'

import { tagsType } from '../../types.bicep'

param name string
param location string = resourceGroup().location
param tags tagsType = {}

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
  }
}

output resourceId string = plan.id
output name string = plan.name
