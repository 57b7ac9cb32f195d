import { loadSettings, SETTING_NAMES, type Settings } from '../../src/config/settings';
import { assertRetentionCoversRedelivery } from '../../src/lifecycle/retention';
import { declaredSettings, type ProviderWorld } from './profiles';

/**
 * The simulator's base settings: a short retention so a schedule reaches the purge, a short message TTL and resubmit
 * margin (the redelivery window the retention must cover), two table partitions. Drawn settings (drawSettings.ts) and
 * the provider's declarations go on top.
 */
export const SIM_BASE_ENV: Readonly<Record<string, string>> = {
  IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  PAYMENT_PROVIDER_URL: 'http://provider.invalid',
  SERVICEBUS_MESSAGE_TTL_SECONDS: String(6 * 3_600),
  DLQ_RESUBMIT_MARGIN_DAYS: '0.5',
  IDEMPOTENCY_RETENTION_DAYS: '1',
  PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '24',
  // Two partitions, not the default 16: the reconciler's query walks both (its position carried between ticks) at an
  // eighth of the store calls a tick (each partition is a query of its own).
  IDEMPOTENCY_PARTITION_COUNT: '2',
};

/**
 * What the deployer declares about the schedule's provider, derived from its profile (the truth, never drawn): the look-up
 * and the key memory. Settings the app adds that state a fact about the provider (a finish window, a look-up lag)
 * belong here, set from `world` (e.g. the profile's longest POST, the look-up's worst lag).
 */
export function declaredFromProvider(world: ProviderWorld): Record<string, string> {
  const declared = declaredSettings(world);
  // Settings the app may add that declare the provider's timing (issue 62: a finish window, a look-up lag), recognised
  // by name and unit suffix until they are named here: the profile's longest POST, the schedule's worst look-up lag.
  for (const name of SETTING_NAMES as readonly string[]) {
    const unitMs = UNIT_MS.find(([suffix]) => name.endsWith(suffix))?.[1];
    if (!unitMs || !name.startsWith('PAYMENT_PROVIDER_')) continue;
    if (name.includes('FINISH')) declared[name] = String(Math.ceil(world.profile.slowPostMaxMs / unitMs));
    else if (name.includes('LOOKUP_LAG')) declared[name] = String(Math.ceil(world.worstLookupLagMs / unitMs));
  }
  return declared;
}

const UNIT_MS: ReadonlyArray<readonly [string, number]> = [
  ['_MS', 1],
  ['_SECONDS', 1_000],
  ['_MINUTES', 60_000],
  ['_HOURS', 3_600_000],
];

/**
 * The settings the simulated app runs with: the base above with `lookup`; `extra` (a script's:
 * test/durable/realEngine.differential.test.ts; a schedule's drawn and declared settings) on top.
 */
export function simSettings(lookup: 'none' | 'by-key', extra: Readonly<Record<string, string>> = {}): Settings {
  const settings = loadSettings({ ...SIM_BASE_ENV, PAYMENT_PROVIDER_LOOKUP: lookup, ...extra });
  assertRetentionCoversRedelivery(settings);
  return settings;
}
