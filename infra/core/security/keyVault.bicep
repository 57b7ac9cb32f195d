metadata description = '''
Key Vault holding the payment provider's webhook signing secret, which the Function App reads as a Key
Vault reference (WEBHOOK_SIGNING_SECRET = @Microsoft.KeyVault(SecretUri=...), resolved by the platform with
the app's user-assigned identity, keyVaultReferenceIdentity). Azure RBAC only (no access policies: the
vault's "local" authorization model is off), soft delete and purge protection on. The secret's value is
never in a file: pass it as the secure parameter (azd env), or set it later with
`az keyvault secret set --vault-name <name> --name webhook-signing-secret --value <secret>`.
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
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true
    enabledForDeployment: false
    enabledForDiskEncryption: false
    enabledForTemplateDeployment: false
    publicNetworkAccess: 'Enabled'
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
@description('Versionless URI of the webhook secret: the Key Vault reference follows its latest version (rotation without a redeploy).')
output webhookReferenceUri string = '${vault.properties.vaultUri}secrets/${webhookSecretName}'
