metadata description = '''
The private deployment's virtual network (vnetEnabled): one subnet delegated to Microsoft.App/environments for the
Flex Consumption app's outbound integration, one for the private endpoints. The shape is Microsoft's Flex
Consumption azd quickstarts' (Azure-Samples/functions-quickstart-typescript-azd infra/app/vnet.bicep): the same
delegation and network policies; the app subnet is a /24 here (251 addresses) because the app scales to 100
instances, each of which takes an address of the subnet.
'''

import { tagsType } from '../../types.bicep'

@description('Virtual network name.')
param name string
@description('Location of the network.')
param location string = resourceGroup().location
@description('Tags applied to the network.')
param tags tagsType = {}

@description('Address space of the network.')
param addressPrefix string = '10.0.0.0/16'
@description('Subnet of the Function App\'s outbound integration (delegated to Microsoft.App/environments, as Flex Consumption requires).')
param appSubnetPrefix string = '10.0.2.0/24'
@description('Subnet of the private endpoints.')
param privateEndpointSubnetPrefix string = '10.0.1.0/26'

@description('Name of the integration subnet.')
var appSubnetName = 'app'
@description('Name of the private endpoint subnet.')
var privateEndpointSubnetName = 'private-endpoints'

// Microsoft.Network/virtualNetworks@2025-05-01
resource vnet 'Microsoft.Network/virtualNetworks@2025-05-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    subnets: [
      {
        name: privateEndpointSubnetName
        properties: {
          addressPrefix: privateEndpointSubnetPrefix
          privateEndpointNetworkPolicies: 'Disabled'
          privateLinkServiceNetworkPolicies: 'Enabled'
        }
      }
      {
        name: appSubnetName
        properties: {
          addressPrefix: appSubnetPrefix
          delegations: [
            {
              name: 'flex-consumption'
              properties: {
                serviceName: 'Microsoft.App/environments'
              }
            }
          ]
          privateEndpointNetworkPolicies: 'Disabled'
          privateLinkServiceNetworkPolicies: 'Enabled'
        }
      }
    ]
  }

  resource appSubnet 'subnets' existing = {
    name: appSubnetName
  }

  resource privateEndpointSubnet 'subnets' existing = {
    name: privateEndpointSubnetName
  }
}

@description('Resource id of the network (for the private DNS zone links).')
output resourceId string = vnet.id
@description('Resource id of the Function App\'s integration subnet.')
output appSubnetId string = vnet::appSubnet.id
@description('Resource id of the private endpoint subnet.')
output privateEndpointSubnetId string = vnet::privateEndpointSubnet.id
