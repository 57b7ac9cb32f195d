import { ConfigurationError } from './errors';

/** Longest store-call deadline accepted: 10 minutes (a Functions invocation's default limit). */
export const MAX_STORE_TIMEOUT_MS = 600_000;
/** Longest lease accepted: one day (the `IDEMPOTENCY_LEASE_SECONDS` ceiling); longer locks a key for good in effect. */
export const MAX_LEASE_MS = 86_400_000;
/** Longest retention accepted: 3,650 days (the `IDEMPOTENCY_RETENTION_DAYS` ceiling). */
export const MAX_RETENTION_MS = 3650 * 86_400_000;
/** Largest completed-key cache accepted (the `IDEMPOTENCY_CACHE_SIZE` ceiling). */
export const MAX_CACHE_SIZE = 10_000_000;

/**
 * `value` when it is an integer from `min` to `max`.
 * @throws ConfigurationError naming the option and its bounds otherwise.
 */
export function integerOption(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(`${name} must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

/** A lease length in milliseconds: an integer from 1 to {@link MAX_LEASE_MS}. @throws ConfigurationError */
export function leaseMsOption(value: unknown, name = 'leaseMs'): number {
  return integerOption(value, name, 1, MAX_LEASE_MS);
}

/** `options` when it is an object (the store's options are required). @throws ConfigurationError */
export function requireOptionsObject<T>(options: T, what: string): NonNullable<T> {
  if (typeof options !== 'object' || options === null)
    throw new ConfigurationError(`${what} must be an object, got ${options === null ? 'null' : typeof options}`);
  return options;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}
