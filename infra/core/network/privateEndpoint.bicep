metadata description = '''
One private endpoint: a network interface in the private endpoint subnet connected to one sub-resource (groupId:
blob, queue, table, vault, Sql, namespace) of one service, and the A record of that service's host name in its
private DNS zone (a zone group, so the record follows the endpoint's address).
'''

import { tagsType } from '../../types.bicep'

@description('Private endpoint name.')
param name string
@description('Location of the endpoint (the virtual network\'s).')
param location string = resourceGroup().location
@description('Tags applied to the endpoint.')
param tags tagsType = {}
@description('Resource id of the private endpoint subnet.')
param subnetId string
@description('Resource id of the service the endpoint connects to.')
param serviceId string
@description('Sub-resource of the service (groupId): blob, queue, table, vault, Sql or namespace.')
param groupId string
@description('Resource id of the private DNS zone that holds the service\'s record.')
param privateDnsZoneId string

// Microsoft.Network/privateEndpoints@2025-05-01
resource endpoint 'Microsoft.Network/privateEndpoints@2025-05-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    subnet: {
      id: subnetId
    }
    privateLinkServiceConnections: [
      {
        name: name
        properties: {
          privateLinkServiceId: serviceId
          groupIds: [
            groupId
          ]
        }
      }
    ]
  }

  resource zoneGroup 'privateDnsZoneGroups' = {
    name: 'default'
    properties: {
      privateDnsZoneConfigs: [
        {
          name: groupId
          properties: {
            privateDnsZoneId: privateDnsZoneId
          }
        }
      ]
    }
  }
}

@description('Resource id of the endpoint.')
output resourceId string = endpoint.id
