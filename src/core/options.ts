import { ConfigurationError } from './errors';

/** Longest store-call deadline accepted: 10 minutes (a Functions invocation's default limit). */
export const MAX_STORE_TIMEOUT_MS = 600_000;

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

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
