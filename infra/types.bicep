metadata description = 'User-defined types shared by the modules: tags and the settings objects main.bicep passes to app/api.bicep.'

@export()
@description('Resource tags: tag name to string value.')
type tagsType = {
  @description('Tag value.')
  *: string
}

@export()
@description('The payment shard an app is (docs/deploy.md "Shards").')
type shardSettingsType = {
  @description('Shards in the deployment (PAYMENT_SHARD_COUNT).')
  @minValue(1)
  count: int

  @description('This app\'s shard, 0 to count - 1 (PAYMENT_SHARD_INDEX).')
  @minValue(0)
  index: int

  @description('The table endpoint of every shard\'s storage account, in shard order (PAYMENT_SHARD_TABLE_ENDPOINTS, set when count > 1).')
  tableEndpoints: string[]?
}

@export()
@description('Idempotency store settings, written to the app settings read by src/config/settings.ts.')
type idempotencySettingsType = {
  @description('Dedup record table (IDEMPOTENCY_TABLE_NAME).')
  tableName: string

  @description('Parked-message table (PARKED_TABLE_NAME).')
  parkedTableName: string

  @description('Partitions the dedup records spread over, fixed for a table\'s lifetime (IDEMPOTENCY_PARTITION_COUNT).')
  partitionCount: int

  @description('Default lease of a claim in seconds (IDEMPOTENCY_LEASE_SECONDS).')
  leaseSeconds: int

  @description('Entries of the in-process cache of completed keys, 0 turns it off (IDEMPOTENCY_CACHE_SIZE).')
  cacheSize: int

  @description('Deadline of each call to the dedup table in milliseconds (IDEMPOTENCY_STORE_TIMEOUT_MS).')
  storeTimeoutMs: int

  @description('Dedup record retention in days, already raised to the redelivery horizon (IDEMPOTENCY_RETENTION_DAYS).')
  retentionDays: int

  @description('Days an operator may take to resubmit a dead-lettered message (DLQ_RESUBMIT_MARGIN_DAYS).')
  dlqResubmitMarginDays: int

  @description('NCRONTAB schedule of the expiry timer (EXPIRY_TIMER_SCHEDULE).')
  expiryTimerSchedule: string

  @description('Time budget of one expiry sweep in seconds (EXPIRY_SWEEP_BUDGET_SECONDS).')
  expirySweepBudgetSeconds: int
}

@export()
@description('Service Bus delivery settings and queue names, the same values the queues are created with.')
type serviceBusSettingsType = {
  @description('Queue lock duration in seconds (SERVICEBUS_LOCK_DURATION_SECONDS).')
  lockDurationSeconds: int

  @description('Queue maxDeliveryCount (SERVICEBUS_MAX_DELIVERY_COUNT).')
  maxDeliveryCount: int

  @description('Queue default message time-to-live in days (SERVICEBUS_MESSAGE_TTL_SECONDS = days x 86400).')
  messageTtlDays: int

  @description('Payments queue name (PAYMENTS_QUEUE_NAME).')
  paymentsQueueName: string

  @description('Orders queue name (ORDERS_QUEUE_NAME).')
  ordersQueueName: string
}

@export()
@description('Cosmos DB orders store names.')
type cosmosSettingsType = {
  @description('Database name (COSMOS_DATABASE_NAME).')
  databaseName: string

  @description('Orders container name (COSMOS_ORDERS_CONTAINER).')
  ordersContainerName: string

  @description('Idempotency records container name (COSMOS_IDEMPOTENCY_CONTAINER).')
  idempotencyContainerName: string

  @description('The payments consumer\'s dedup store (IDEMPOTENCY_STORE): table or cosmos.')
  idempotencyStore: ('table' | 'cosmos')
}

@export()
@description('Third-party payment provider settings.')
type paymentProviderSettingsType = {
  @description('Base URL of the provider (PAYMENT_PROVIDER_URL); required.')
  url: string

  @description('Timeout of one provider call in milliseconds (PAYMENT_PROVIDER_TIMEOUT_MS).')
  timeoutMs: int
}

@export()
@description('HTTP functions: Idempotency-Key records, caller identity and the provider webhook.')
type httpSettingsType = {
  @description('Idempotency-Key record retention in hours (HTTP_IDEMPOTENCY_RETENTION_HOURS).')
  retentionHours: int

  @description('Lease of an HTTP request\'s claim in seconds (HTTP_IDEMPOTENCY_LEASE_SECONDS).')
  leaseSeconds: int

  @description('What scopes the keys: functionKey, or easyAuth with App Service authentication (HTTP_CALLER_IDENTITY).')
  callerIdentity: ('functionKey' | 'easyAuth')

  @description('Accepted clock skew of a webhook signature in seconds (WEBHOOK_TOLERANCE_SECONDS).')
  webhookToleranceSeconds: int

  @description('Event-id dedup retention in hours (WEBHOOK_RETENTION_HOURS).')
  webhookRetentionHours: int

  @description('Table of the Payment rows the webhook writes (PAYMENT_STATE_TABLE_NAME).')
  paymentStateTableName: string

  @description('Versionless Key Vault URI of the webhook signing secret (WEBHOOK_SIGNING_SECRET is a reference to it).')
  webhookSecretUri: string

  @description('Versionless Key Vault URI of the previous webhook signing secret, accepted during a rotation (WEBHOOK_SIGNING_SECRET_PREVIOUS).')
  webhookPreviousSecretUri: string
}

@export()
@description('The rewards consumer: its Event Hubs trigger (connection EventHubConnection) and its table.')
type rewardsSettingsType = {
  @description('Event Hubs namespace host name (EventHubConnection__fullyQualifiedNamespace).')
  fullyQualifiedNamespace: string

  @description('Event hub name (REWARDS_EVENT_HUB_NAME).')
  hubName: string

  @description('Consumer group (REWARDS_CONSUMER_GROUP).')
  consumerGroup: string

  @description('Balances and event markers table (REWARDS_TABLE_NAME).')
  tableName: string

  @description('Days the hub keeps an event (REWARDS_EVENT_HUB_RETENTION_DAYS); markers are kept one day more (REWARDS_MARKER_RETENTION_DAYS).')
  eventHubRetentionDays: int

  @description('The hub\'s cleanup policy as deployed (REWARDS_EVENT_HUB_CLEANUP_POLICY): the app refuses to start unless Delete.')
  eventHubCleanupPolicy: string
}
