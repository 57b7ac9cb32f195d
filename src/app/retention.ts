import type { Settings } from '../config/settings';

const DAY_MS = 86_400_000;

/**
 * The dedup records' retention from the settings. The expiry issue replaces this with the full
 * rule (checked against the broker's redelivery window at start).
 */
export function retentionMsFromSettings(settings: Settings): number {
  return settings.IDEMPOTENCY_RETENTION_DAYS * DAY_MS;
}
