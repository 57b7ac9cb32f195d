metadata description = '''
Key Vault holding the payment provider's webhook signing secret, which the Function App reads as a Key
Vault reference (WEBHOOK_SIGNING_SECRET = @Microsoft.KeyVault(SecretUri=...), resolved by the platform with
the app's user-assigned identity, keyVaultReferenceIdentity). Azure RBAC only (no access policies: the
vault's "local" authorization model is off). Soft delete is always on; purge protection is a parameter (on for
production): with it on, a deleted vault cannot be purged and its name stays taken for the retention period, so
a redeploy of the same environment must recover it (createMode 'recover'). The secret's value is never in a
file: pass it as the secure parameter (azd env), or set it later with
`az keyvault secret set --vault-name <name> --name webhook-signing-secret --value <secret>`. A second entry,
webhook-signing-secret-previous, holds the previous secret during a rotation (docs/deploy.md).
'''

import { tagsType } from '../../types.bicep'

@description('Key Vault name (3-24 characters).')
param name string
@description('Location of the vault.')
param location string = resourceGroup().location
@description('Tags of the vault.')
param tags tagsType = {}
@description('Name of the secret the app references.')
param webhookSecretName string = 'webhook-signing-secret'
@description('Name of the previous secret, accepted during a rotation.')
param webhookPreviousSecretName string = 'webhook-signing-secret-previous'
@description('Purge protection: on for production (irreversible on a vault; a deleted vault then keeps its name for softDeleteRetentionInDays and can only be recovered).')
param enablePurgeProtection bool = false
@minValue(7)
@maxValue(90)
@description('Days a deleted vault (and secret) stays recoverable. Set once, when the vault is created: the service does not change it on an existing vault, so the default stays the 90 days earlier versions deployed.')
param softDeleteRetentionInDays int = 90
@allowed([
  'default'
  'recover'
])
@description('default: create or update. recover: bring back the soft-deleted vault of the same name (after azd down of an environment with purge protection).')
param createMode string = 'default'
@description('Private deployment (vnetEnabled): public network access off; the platform resolves the Key Vault references through the app\'s virtual network and the vault\'s private endpoint.')
param privateNetworkOnly bool = false
@description('Log Analytics workspace the vault\'s audit log (AuditEvent) and metrics go to.')
param logAnalyticsWorkspaceId string
@secure()
@description('The provider\'s webhook signing secret. Empty: the secret is not written here (set it by hand before the first webhook).')
param webhookSigningSecret string = ''

// Microsoft.KeyVault/vaults@2025-05-01
resource vault 'Microsoft.KeyVault/vaults@2025-05-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: softDeleteRetentionInDays
    // The service refuses false (purge protection cannot be turned off): leave the property out instead.
    enablePurgeProtection: enablePurgeProtection ? true : null
    createMode: createMode
    enabledForDeployment: false
    enabledForDiskEncryption: false
    enabledForTemplateDeployment: false
    publicNetworkAccess: privateNetworkOnly ? 'Disabled' : 'Enabled'
    networkAcls: {
      defaultAction: privateNetworkOnly ? 'Deny' : 'Allow'
      bypass: 'None'
    }
  }
}

// Every access to the vault (secret reads by the platform included) in the workspace's AzureDiagnostics table.
#disable-next-line use-recent-api-versions // categoryGroup and logAnalyticsDestinationType need 2021-05-01-preview, the newest version; the rule accepts only the older stable 2016-09-01, which has neither.
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: vault
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        categoryGroup: 'audit'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

resource webhookSecret 'Microsoft.KeyVault/vaults/secrets@2025-05-01' = if (!empty(webhookSigningSecret)) {
  parent: vault
  name: webhookSecretName
  properties: {
    value: webhookSigningSecret
    contentType: 'text/plain'
  }
}

@description('Key Vault name.')
output name string = vault.name
@description('Resource id of the vault (its private endpoint).')
output resourceId string = vault.id
@description('Versionless URI of the webhook secret: the Key Vault reference follows its latest version (rotation without a redeploy).')
output webhookReferenceUri string = '${vault.properties.vaultUri}secrets/${webhookSecretName}'
@description('Versionless URI of the previous webhook secret (set only during a rotation).')
output webhookPreviousReferenceUri string = '${vault.properties.vaultUri}secrets/${webhookPreviousSecretName}'
