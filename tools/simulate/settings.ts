import { loadSettings, type Settings } from '../../src/config/settings';
import { assertRetentionCoversRedelivery } from '../../src/lifecycle/retention';

/**
 * The settings the simulated app runs with: the app's defaults, a short retention so a schedule reaches the purge, two
 * table partitions;
 * `extra` (a script's: test/durable/realEngine.differential.test.ts) on top.
 */
export function simSettings(lookup: 'none' | 'by-key', extra: Readonly<Record<string, string>> = {}): Settings {
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
    PAYMENT_PROVIDER_URL: 'http://provider.invalid',
    SERVICEBUS_MESSAGE_TTL_SECONDS: String(6 * 3_600),
    DLQ_RESUBMIT_MARGIN_DAYS: '0.5',
    IDEMPOTENCY_RETENTION_DAYS: '1',
    PAYMENT_PROVIDER_LOOKUP: lookup,
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '24',
    // Two partitions, not the default 16: the reconciler's query walks both (its position carried between ticks) at an
    // eighth of the store calls a tick (each partition is a query of its own).
    IDEMPOTENCY_PARTITION_COUNT: '2',
    ...extra,
  });
  assertRetentionCoversRedelivery(settings);
  return settings;
}
