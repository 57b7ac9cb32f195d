metadata description = 'The one user-assigned managed identity the Function App uses for every data-plane call.'

import { tagsType } from '../../types.bicep'

param name string
param location string = resourceGroup().location
param tags tagsType = {}

// Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30 (GA)
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = {
  name: name
  location: location
  tags: tags
}

output resourceId string = identity.id
output name string = identity.name
output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
