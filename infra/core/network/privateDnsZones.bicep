metadata description = '''
Private DNS zones of the private endpoints (privatelink.<service> names, as Azure documents them for each service:
learn.microsoft.com/azure/private-link/private-endpoint-dns), each linked to the virtual network so the app resolves
the services' public host names to their private endpoints' addresses.
'''

import { tagsType } from '../../types.bicep'

@description('Zone names, e.g. privatelink.blob.core.windows.net.')
param zoneNames string[]
@description('Resource id of the virtual network the zones are linked to.')
param virtualNetworkId string
@description('Tags applied to the zones.')
param tags tagsType = {}

// Microsoft.Network/privateDnsZones@2024-06-01 (a global resource)
resource zones 'Microsoft.Network/privateDnsZones@2024-06-01' = [
  for zoneName in zoneNames: {
    name: zoneName
    location: 'global'
    tags: tags
  }
]

resource links 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01' = [
  for (zoneName, i) in zoneNames: {
    parent: zones[i]
    name: 'vnet-link'
    location: 'global'
    tags: tags
    properties: {
      registrationEnabled: false
      virtualNetwork: {
        id: virtualNetworkId
      }
    }
  }
]

@description('Resource id of each zone, in the order of zoneNames.')
output zoneIds string[] = [for (zoneName, i) in zoneNames: zones[i].id]
