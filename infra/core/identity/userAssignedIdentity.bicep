metadata description = 'The one user-assigned managed identity the Function App uses for every data-plane call.'

import { tagsType } from '../../types.bicep'

@description('Identity name.')
param name string
@description('Location of the identity.')
param location string = resourceGroup().location
@description('Tags applied to the identity.')
param tags tagsType = {}

// Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30 (GA)
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = {
  name: name
  location: location
  tags: tags
}

@description('Resource id of the identity.')
output resourceId string = identity.id
@description('Identity name.')
output name string = identity.name
@description('Object (principal) id of the identity, for role assignments.')
output principalId string = identity.properties.principalId
@description('Client id of the identity, for token requests.')
output clientId string = identity.properties.clientId
