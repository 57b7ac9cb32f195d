import { z } from 'zod';
import { ConfigurationError } from 'azure-functions-idempotency';
import { callTimingProblem, retryRoundsProblem } from './callTiming';
import { shardTableEndpointsProblem } from './shardTableEndpoints';

/**
 * Every app setting the code reads, read and validated once into one typed object. Names are the
 * same here, in `local.settings.json.example` and in the Bicep app settings (a test holds them
 * together). A missing or malformed setting fails at start with a message naming it.
 */
export const SETTING_NAMES = [
  'IDEMPOTENCY_TABLE_NAME',
  'PARKED_TABLE_NAME',
  'IDEMPOTENCY_TABLE_CONNECTION_STRING',
  'IDEMPOTENCY_TABLE_ENDPOINT',
  'IDEMPOTENCY_PARTITION_COUNT',
  'IDEMPOTENCY_LEASE_SECONDS',
  'IDEMPOTENCY_CACHE_SIZE',
  'IDEMPOTENCY_STORE_TIMEOUT_MS',
  'IDEMPOTENCY_RETENTION_DAYS',
  'SERVICEBUS_LOCK_DURATION_SECONDS',
  'SERVICEBUS_MAX_DELIVERY_COUNT',
  'SERVICEBUS_MESSAGE_TTL_SECONDS',
  'DLQ_RESUBMIT_MARGIN_DAYS',
  'EXPIRY_TIMER_SCHEDULE',
  'EXPIRY_SWEEP_BUDGET_SECONDS',
  'PAYMENTS_QUEUE_NAME',
  'ORDERS_QUEUE_NAME',
  'PAYMENT_PROVIDER_URL',
  'PAYMENT_PROVIDER_TIMEOUT_MS',
  'COSMOS_ENDPOINT',
  'COSMOS_KEY',
  'COSMOS_DATABASE_NAME',
  'COSMOS_ORDERS_CONTAINER',
  'AZURE_CLIENT_ID',
  'APPLICATIONINSIGHTS_CONNECTION_STRING',
  'SERVICEBUS_FULLY_QUALIFIED_NAMESPACE',
  'SERVICEBUS_CONNECTION_STRING',
  'HTTP_IDEMPOTENCY_RETENTION_HOURS',
  'HTTP_IDEMPOTENCY_LEASE_SECONDS',
  'HTTP_CALLER_IDENTITY',
  'WEBHOOK_SIGNING_SECRET',
  'WEBHOOK_SIGNING_SECRET_PREVIOUS',
  'WEBHOOK_TOLERANCE_SECONDS',
  'WEBHOOK_RETENTION_HOURS',
  'PAYMENT_STATE_TABLE_NAME',
  'REWARDS_EVENT_HUB_NAME',
  'REWARDS_CONSUMER_GROUP',
  'REWARDS_TABLE_NAME',
  'REWARDS_EVENT_HUB_RETENTION_DAYS',
  'REWARDS_MARKER_RETENTION_DAYS',
  'REWARDS_EVENT_HUB_CLEANUP_POLICY',
  'PAYMENTS_DESIGN',
  'PAYMENT_RETRY_BUDGET_MINUTES',
  'PAYMENT_RETRY_FIRST_DELAY_SECONDS',
  'PAYMENT_RETRY_MAX_DELAY_SECONDS',
  'IDEMPOTENCY_STORE',
  'COSMOS_IDEMPOTENCY_CONTAINER',
  'PAYMENT_PROVIDER_LOOKUP',
  'PAYMENT_PROVIDER_KEY_MEMORY_HOURS',
  'PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS',
  'PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS',
  'PAYMENT_PROVIDER_KEY_MEMORY_KEEPS',
  'PAYMENT_SHARD_COUNT',
  'PAYMENT_SHARD_INDEX',
  'PAYMENT_SHARD_TABLE_ENDPOINTS',
  'PAYMENT_PROVIDER_LEDGER',
  'PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS',
  'LEDGER_CHECK_SCHEDULE',
  'LEDGER_CHECK_PAGES_PER_TICK',
  'LEDGER_CHECK_BUDGET_SECONDS',
] as const;
export type SettingName = (typeof SETTING_NAMES)[number];

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const optionalText = z.string().trim().min(1).optional();

const schema = z
  .object({
    IDEMPOTENCY_TABLE_NAME: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9]{2,62}$/, 'a Table name: 3-63 letters and digits, starting with a letter')
      .default('idempotency'),
    PARKED_TABLE_NAME: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9]{2,62}$/, 'a Table name: 3-63 letters and digits, starting with a letter')
      .default('parkedmessages'),
    IDEMPOTENCY_TABLE_CONNECTION_STRING: optionalText,
    IDEMPOTENCY_TABLE_ENDPOINT: z.string().url().optional(),
    IDEMPOTENCY_PARTITION_COUNT: int(1, 4096).default(16),
    IDEMPOTENCY_LEASE_SECONDS: int(1, 86_400).default(60),
    IDEMPOTENCY_CACHE_SIZE: int(0, 10_000_000).default(10_000),
    // Deadline of each call to the idempotency table (SDK retries included; src/core/deadline.ts), of each
    // parking call, and of each request of any app Table client (the sweep and its checkpoint).
    IDEMPOTENCY_STORE_TIMEOUT_MS: int(100, 600_000).default(5_000),
    IDEMPOTENCY_RETENTION_DAYS: z.coerce.number().positive().max(3650).default(30),
    SERVICEBUS_LOCK_DURATION_SECONDS: int(5, 300).default(60),
    SERVICEBUS_MAX_DELIVERY_COUNT: int(1, 2000).default(10),
    SERVICEBUS_MESSAGE_TTL_SECONDS: int(1, 2_147_483_647).default(14 * 86_400),
    DLQ_RESUBMIT_MARGIN_DAYS: z.coerce.number().min(0).max(3650).default(14),
    EXPIRY_TIMER_SCHEDULE: z.string().trim().min(1).default('0 */15 * * * *'),
    EXPIRY_SWEEP_BUDGET_SECONDS: int(1, 3600).default(240),
    PAYMENTS_QUEUE_NAME: z.string().trim().min(1).default('payments'),
    /** Task hubs the payments are routed to by key (src/payments/shards.ts); this app is shard PAYMENT_SHARD_INDEX, its queue `<base>-<index>`. */
    PAYMENT_SHARD_COUNT: int(1, 64).default(1),
    PAYMENT_SHARD_INDEX: int(0, 63).default(0),
    /** Every shard's table endpoint in shard order (src/payments/shardTables.ts): status, webhook and operator tools reach a payment's owner. */
    PAYMENT_SHARD_TABLE_ENDPOINTS: optionalText,
    ORDERS_QUEUE_NAME: z.string().trim().min(1).default('orders'),
    PAYMENT_PROVIDER_URL: z.string().url().optional(),
    PAYMENT_PROVIDER_TIMEOUT_MS: int(100, 120_000).default(10_000),
    COSMOS_ENDPOINT: z.string().url().optional(),
    /** Local only (the Cosmos DB emulator's key); never deployed: Azure uses the managed identity. */
    COSMOS_KEY: optionalText,
    COSMOS_DATABASE_NAME: z.string().trim().min(1).default('shop'),
    COSMOS_ORDERS_CONTAINER: z.string().trim().min(1).default('orders'),
    AZURE_CLIENT_ID: optionalText,
    APPLICATIONINSIGHTS_CONNECTION_STRING: optionalText,
    // POST /api/payments sends to PAYMENTS_QUEUE_NAME: in Azure with the identity on this namespace;
    // locally (the Service Bus emulator) with SERVICEBUS_CONNECTION_STRING, which is never deployed.
    SERVICEBUS_FULLY_QUALIFIED_NAMESPACE: optionalText,
    SERVICEBUS_CONNECTION_STRING: optionalText,
    // Idempotency-Key records of POST /api/payments: kept 24 h (Stripe's window) after their last write.
    HTTP_IDEMPOTENCY_RETENTION_HOURS: z.coerce.number().positive().max(8760).default(24),
    HTTP_IDEMPOTENCY_LEASE_SECONDS: int(1, 3600).default(30),
    HTTP_CALLER_IDENTITY: z.enum(['functionKey', 'easyAuth']).default('functionKey'),
    /** The payment provider's webhook signing secret; in Azure a Key Vault reference. Without it the webhook answers 503. */
    WEBHOOK_SIGNING_SECRET: z.string().min(16, 'at least 16 characters').optional(),
    /** The previous secret, accepted too while a rotation is under way (docs/deploy.md); unset otherwise. */
    WEBHOOK_SIGNING_SECRET_PREVIOUS: z.string().min(16, 'at least 16 characters').optional(),
    WEBHOOK_TOLERANCE_SECONDS: int(1, 3600).default(300),
    WEBHOOK_RETENTION_HOURS: z.coerce.number().positive().max(8760).default(72),
    PAYMENT_STATE_TABLE_NAME: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9]{2,62}$/, 'a Table name: 3-63 letters and digits, starting with a letter')
      .default('paymentstate'),
    // The rewards consumer (Event Hubs trigger, connection `EventHubConnection`): hub, consumer group, balances table.
    REWARDS_EVENT_HUB_NAME: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/, 'an Event Hub name: 1-256 letters, digits, periods, hyphens, underscores')
      .default('payments-succeeded'),
    REWARDS_CONSUMER_GROUP: z
      .string()
      .regex(/^(\$Default|[A-Za-z0-9][A-Za-z0-9._-]{0,49})$/, 'a consumer group name: $Default, or 1-50 letters, digits, periods, hyphens, underscores')
      .default('rewards'),
    REWARDS_TABLE_NAME: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9]{2,62}$/, 'a Table name: 3-63 letters and digits, starting with a letter')
      .default('rewards'),
    // How long the hub keeps an event (the Bicep's eventHubRetentionDays): what can still replay it; the rewards
    // markers must outlive it (REWARDS_MARKER_RETENTION_DAYS >= it + 1 day, checked at start; src/lifecycle/rewardMarkers.ts).
    REWARDS_EVENT_HUB_RETENTION_DAYS: z.coerce.number().positive().max(90).default(7),
    REWARDS_MARKER_RETENTION_DAYS: z.coerce.number().positive().max(3650).default(8),
    // The hub's cleanup policy as deployed (the Bicep passes the hub's own retentionDescription.cleanupPolicy): only
    // Delete bounds how long an event can be read again; Compact keeps the latest event per key without a time limit.
    REWARDS_EVENT_HUB_CLEANUP_POLICY: z.enum(['Delete', 'Compact', 'DeleteOrCompact']).default('Delete'),
    /** `handoff`: the trigger acknowledges once the charge orchestration is durably started; `hold`: it waits for the charge (docs/DESIGN.md). */
    PAYMENTS_DESIGN: z.enum(['handoff', 'hold']).default('handoff'),
    /** Handoff: how long the orchestration retries transient provider failures (durable timers) before the payment ends `failed`. */
    PAYMENT_RETRY_BUDGET_MINUTES: z.coerce.number().positive().max(10_080).default(60),
    /** Handoff: the first retry delay; each next one doubles, up to `PAYMENT_RETRY_MAX_DELAY_SECONDS`. */
    PAYMENT_RETRY_FIRST_DELAY_SECONDS: z.coerce.number().positive().max(3600).default(5),
    PAYMENT_RETRY_MAX_DELAY_SECONDS: z.coerce.number().positive().max(86_400).default(300),
    /** How the provider lets a charge be found by its key (src/payments/providerLookup.ts): `none` (Stripe) or `by-key` (`GET /v1/charges?idempotency_key=`). */
    PAYMENT_PROVIDER_LOOKUP: z.enum(['none', 'by-key']).default('none'),
    /** How long the provider remembers an `Idempotency-Key` (Stripe: 24 h); 0: it keeps none. */
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: z.coerce.number().min(0).max(87_600).default(24),
    /**
     * How long the provider may still be working on a charge after the client gave up (no provider documents its own
     * limit: a declaration). With the timeout and the look-up's lag it sizes a call's lease (src/payments/callLease.ts).
     */
    PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS: z.coerce.number().min(0).max(86_400).default(60),
    /** How long before a charge shows in the provider's look-up (Stripe's search: about a minute; a consistent list: 0). */
    PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS: z.coerce.number().min(0).max(86_400).default(60),
    /**
     * What the provider's key memory replays: `every-answer` (Stripe v1: "the same result, including 500 errors") or
     * `successes` (Checkout.com caches only 2xx; PayPal: retry 5xx for as long as the id is stored): a retry after a
     * failure re-executes, so a repeat never relies on the key memory (looked up first, or held).
     */
    PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: z.enum(['every-answer', 'successes']).default('every-answer'),
    // The payments consumer's dedup store (docs/stores.md): the idempotency table (default), or the Cosmos DB
    // container COSMOS_IDEMPOTENCY_CONTAINER in COSMOS_DATABASE_NAME at COSMOS_ENDPOINT (partition key /recordId, TTL on).
    IDEMPOTENCY_STORE: z.enum(['table', 'cosmos']).default('table'),
    COSMOS_IDEMPOTENCY_CONTAINER: z.string().trim().min(1).default('idempotency'),
    /**
     * The ledger check (src/app/ledgerCheckTimer.ts): `list` when the provider lists its charges by time window
     * (`GET /v1/charges?created_gte=&created_lt=`: Stripe's list, PayPal's transaction search); `none` (Adyen: reports
     * only) runs no check, and the app says so once at start.
     */
    PAYMENT_PROVIDER_LEDGER: z.enum(['none', 'list']).default('none'),
    /** How long after its creation a charge shows in the provider's list (Stripe's list: 0; PayPal's search: 10,800). */
    PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS: int(0, 31 * 86_400).default(0),
    /** When the ledger check runs (NCRONTAB, six fields): every 5 minutes by default. */
    LEDGER_CHECK_SCHEDULE: z.string().trim().min(1).default('0 */5 * * * *'),
    /** List pages (100 charges each) one ledger check tick reads at most; the next tick goes on from its checkpoint. */
    LEDGER_CHECK_PAGES_PER_TICK: int(1, 10_000).default(50),
    /** The time one ledger check tick may take before it saves its checkpoint and stops. */
    LEDGER_CHECK_BUDGET_SECONDS: int(1, 3600).default(120),
  })
  .refine((s) => s.IDEMPOTENCY_STORE !== 'cosmos' || s.COSMOS_ENDPOINT, {
    message: 'IDEMPOTENCY_STORE=cosmos needs COSMOS_ENDPOINT (a valid URL)',
    path: ['IDEMPOTENCY_STORE'],
  })
  .refine((s) => s.PAYMENT_PROVIDER_KEY_MEMORY_HOURS > 0 || s.PAYMENT_PROVIDER_LOOKUP !== 'none', {
    message:
      'PAYMENT_PROVIDER_KEY_MEMORY_HOURS=0 (a provider that keeps no keys) needs PAYMENT_PROVIDER_LOOKUP=by-key: nothing else can tell a repeated call from a new one',
    path: ['PAYMENT_PROVIDER_LOOKUP'],
  })
  .superRefine((s, context) => {
    // A call's lease is sized from these (src/config/callTiming.ts); a timing the key memory cannot cover is refused.
    const timing = callTimingProblem(s);
    if (timing) context.addIssue({ code: 'custom', message: timing, path: ['PAYMENT_PROVIDER_TIMEOUT_MS'] });
    const rounds = retryRoundsProblem(s);
    if (rounds) context.addIssue({ code: 'custom', message: rounds, path: ['PAYMENT_RETRY_BUDGET_MINUTES'] });
    const problem = shardTableEndpointsProblem(s.PAYMENT_SHARD_TABLE_ENDPOINTS, s.PAYMENT_SHARD_COUNT);
    if (problem) context.addIssue({ code: 'custom', message: problem, path: ['PAYMENT_SHARD_TABLE_ENDPOINTS'] });
  })
  .refine((s) => s.IDEMPOTENCY_TABLE_CONNECTION_STRING || s.IDEMPOTENCY_TABLE_ENDPOINT, {
    message: 'set IDEMPOTENCY_TABLE_ENDPOINT (Azure, managed identity) or IDEMPOTENCY_TABLE_CONNECTION_STRING (local Azurite)',
    path: ['IDEMPOTENCY_TABLE_ENDPOINT'],
  });

export type Settings = z.infer<typeof schema>;

/**
 * Reads and validates the settings from `env` (default `process.env`). Empty strings count as unset.
 * @throws ConfigurationError naming every bad setting.
 */
export function loadSettings(env: Readonly<Record<string, string | undefined>> = process.env): Settings {
  const parsed = schema.safeParse(settingsInput(env));
  if (!parsed.success)
    throw new ConfigurationError(
      `invalid app settings: ${problemsOf(parsed.error.issues)
        .map((p) => p.problem)
        .join('; ')}`,
    );
  return parsed.data;
}

/** Every bad setting in `env`: its name and the problem (`NAME: rule`); empty when `loadSettings` would succeed. */
export function settingProblems(env: Readonly<Record<string, string | undefined>>): Array<{ name: string; problem: string }> {
  const parsed = schema.safeParse(settingsInput(env));
  return parsed.success ? [] : problemsOf(parsed.error.issues);
}

function settingsInput(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const input: Record<string, string> = {};
  for (const name of SETTING_NAMES) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') input[name] = value;
  }
  return input;
}

function problemsOf(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): Array<{ name: string; problem: string }> {
  return issues.map((issue) => {
    const name = issue.path.map(String).join('.') || '(settings)';
    return { name, problem: `${name}: ${issue.message}` };
  });
}
