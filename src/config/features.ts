import { loadSettings, SETTING_NAMES, settingProblems, type SettingName, type Settings } from './settings';

/**
 * The app's features and the settings each one alone needs. A setting not listed here is shared (the
 * idempotency table, the broker's redelivery window, the identity, telemetry): every function needs it,
 * so a bad one still stops the app at start. A bad or missing setting of one feature stops that feature
 * only (`src/app/host.ts` decides how: not registered, or an HTTP 503), never the others.
 */
export const FEATURE_SETTINGS = {
  /** The payments consumer: its Service Bus trigger, the charge orchestration, entity and activity. */
  payments: [
    'PAYMENTS_QUEUE_NAME',
    'PAYMENT_PROVIDER_URL',
    'PAYMENT_PROVIDER_TIMEOUT_MS',
    'PAYMENTS_DESIGN',
    'PAYMENT_RETRY_BUDGET_MINUTES',
    'PAYMENT_RETRY_FIRST_DELAY_SECONDS',
    'PAYMENT_RETRY_MAX_DELAY_SECONDS',
    'PAYMENT_PROVIDER_LOOKUP',
    'PAYMENT_PROVIDER_KEY_MEMORY_HOURS',
    'PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS',
    'PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS',
    'PAYMENT_PROVIDER_KEY_MEMORY_KEEPS',
  ],
  /** The orders consumer (Cosmos DB). */
  orders: ['ORDERS_QUEUE_NAME', 'COSMOS_ENDPOINT', 'COSMOS_KEY', 'COSMOS_DATABASE_NAME', 'COSMOS_ORDERS_CONTAINER'],
  /** The expiry timer. */
  expiryTimer: ['EXPIRY_TIMER_SCHEDULE', 'EXPIRY_SWEEP_BUDGET_SECONDS'],
  /** `POST /api/payments`. */
  paymentsApi: [
    'PAYMENTS_QUEUE_NAME',
    'SERVICEBUS_FULLY_QUALIFIED_NAMESPACE',
    'SERVICEBUS_CONNECTION_STRING',
    'HTTP_CALLER_IDENTITY',
    'HTTP_IDEMPOTENCY_LEASE_SECONDS',
    'HTTP_IDEMPOTENCY_RETENTION_HOURS',
  ],
  /** `GET /api/payments/{paymentId}`: shared settings only. */
  paymentStatus: [],
  /** `POST /api/webhooks/payment-provider`. */
  webhook: [
    'WEBHOOK_SIGNING_SECRET',
    'WEBHOOK_SIGNING_SECRET_PREVIOUS',
    'WEBHOOK_TOLERANCE_SECONDS',
    'WEBHOOK_RETENTION_HOURS',
    'PAYMENT_STATE_TABLE_NAME',
    'HTTP_IDEMPOTENCY_LEASE_SECONDS',
  ],
  /** The rewards consumer (Event Hubs, `cardinality: 'many'`). */
  rewards: [
    'REWARDS_EVENT_HUB_NAME',
    'REWARDS_CONSUMER_GROUP',
    'REWARDS_TABLE_NAME',
    'REWARDS_EVENT_HUB_RETENTION_DAYS',
    'REWARDS_MARKER_RETENTION_DAYS',
    'REWARDS_EVENT_HUB_CLEANUP_POLICY',
  ],
  /** The ledger check's timer (the provider's list of charges matched to the payments records). */
  ledgerCheck: [
    'PAYMENT_PROVIDER_URL',
    'PAYMENT_PROVIDER_TIMEOUT_MS',
    'PAYMENT_PROVIDER_LEDGER',
    'PAYMENT_PROVIDER_LEDGER_DELAY_SECONDS',
    'LEDGER_CHECK_SCHEDULE',
    'LEDGER_CHECK_PAGES_PER_TICK',
    'LEDGER_CHECK_BUDGET_SECONDS',
  ],
} as const satisfies Record<string, readonly SettingName[]>;
export type Feature = keyof typeof FEATURE_SETTINGS;

/** The settings a feature requires to be set (beyond the schema's defaults): at least one of each group. */
const REQUIRED: Partial<Record<Feature, ReadonlyArray<readonly SettingName[]>>> = {
  payments: [['PAYMENT_PROVIDER_URL']],
  orders: [['COSMOS_ENDPOINT']],
  paymentsApi: [['SERVICEBUS_FULLY_QUALIFIED_NAMESPACE', 'SERVICEBUS_CONNECTION_STRING']],
  webhook: [['WEBHOOK_SIGNING_SECRET']],
};

/** The app's settings with, per feature, why it cannot run (absent: it can). */
export interface AppSettings {
  readonly settings: Settings;
  readonly problems: Readonly<Partial<Record<Feature, string>>>;
}

const FEATURES = Object.keys(FEATURE_SETTINGS) as Feature[];
const isShared = (name: string) => !FEATURES.some((f) => (FEATURE_SETTINGS[f] as readonly string[]).includes(name));

/**
 * Reads the settings as the deployed app does: a bad shared setting throws (naming it); a bad or missing
 * setting of a feature is reported in `problems` for each feature that uses it, and the other settings are
 * read as usual (the bad one is treated as unset, so it can never be used by accident).
 * @throws ConfigurationError naming every bad shared setting.
 */
export function loadAppSettings(env: Readonly<Record<string, string | undefined>> = process.env): AppSettings {
  const problems: Partial<Record<Feature, string[]>> = {};
  const report = (feature: Feature, problem: string) => (problems[feature] ??= []).push(problem);
  const cleaned: Record<string, string | undefined> = {};
  for (const name of SETTING_NAMES) cleaned[name] = env[name];
  for (const { name, problem } of settingProblems(env)) {
    if (isShared(name)) continue; // loadSettings below throws for it, with every other shared problem
    for (const feature of FEATURES) if ((FEATURE_SETTINGS[feature] as readonly string[]).includes(name)) report(feature, problem);
    cleaned[name] = undefined;
  }
  const settings = loadSettings(cleaned);
  for (const feature of FEATURES) {
    for (const group of REQUIRED[feature] ?? []) {
      if (group.every((name) => settings[name] === undefined) && !problems[feature]?.some((p) => group.some((name) => p.startsWith(`${name}:`)))) {
        report(feature, `${group.join(' or ')}: required, not set`);
      }
    }
  }
  return { settings, problems: Object.fromEntries(Object.entries(problems).map(([f, list]) => [f, list.join('; ')])) };
}
