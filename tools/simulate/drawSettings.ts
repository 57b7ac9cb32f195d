import { ConfigurationError } from 'azure-functions-idempotency';
import { loadSettings, settingProblems, type Settings } from '../../src/config/settings';
import { assertRetentionCoversRedelivery } from '../../src/lifecycle/retention';
import { assertLeaseWithinRetention, assertPatienceCoversCharge, assertRetryBudgetWithinRetention } from '../../src/payments/chargePatience';
import type { Random } from './random';

/**
 * Settings as a dimension of the schedules (issue 62 item 1): every setting that touches payments is drawn from the
 * range the settings schema accepts (src/config/settings.ts), not only its default. The ranges are not copied here:
 * they are read off the schema itself by probing `settingProblems` (which values it refuses), so a bound changed in the
 * schema moves the draws with it. A combination the app refuses at start is not a schedule: it is counted ("refused at
 * start") and drawn again from a sub-stream.
 *
 * **To draw a new setting**, add its name to {@link DRAWN}; a setting that states a fact about the provider (the
 * deployer declares it: key memory, look-up, a finish window, a look-up lag) goes in {@link declaredFromProvider} in
 * simulate's settings.ts instead, derived from the schedule's provider profile (a declaration the provider does not
 * honour is a wrong deployment, not a schedule).
 */

/** The settings drawn, each with the simulator's own cap where the world's length grows with it (one place to extend). */
export const DRAWN: ReadonlyArray<{ readonly name: string; readonly simCap?: number; readonly floor?: number }> = [
  { name: 'PAYMENT_PROVIDER_TIMEOUT_MS' },
  { name: 'IDEMPOTENCY_LEASE_SECONDS' },
  { name: 'PAYMENT_RETRY_BUDGET_MINUTES', floor: 1 },
  { name: 'PAYMENT_RETRY_FIRST_DELAY_SECONDS', floor: 0.5 },
  { name: 'PAYMENT_RETRY_MAX_DELAY_SECONDS', floor: 1 },
  { name: 'SERVICEBUS_MAX_DELIVERY_COUNT' },
  { name: 'SERVICEBUS_LOCK_DURATION_SECONDS' },
  { name: 'IDEMPOTENCY_STORE_TIMEOUT_MS' },
  { name: 'EXPIRY_SWEEP_BUDGET_SECONDS' },
  // The world runs the retention after the faults (to reach the sweep and the purge): capped at 3 days.
  { name: 'IDEMPOTENCY_RETENTION_DAYS', simCap: 3 },
];

/** Probability a drawn setting keeps its default (unset). */
const KEEP_DEFAULT = 0.3;

/** A setting's accepted numeric range, as the schema answers. */
export interface AcceptedRange {
  readonly min: number;
  /** The minimum itself refused (`positive()`): the draw starts above it. */
  readonly minExclusive: boolean;
  readonly max: number;
  readonly integer: boolean;
}

const ranges = new Map<string, AcceptedRange>();

/** The range the schema accepts for `name` (with the other settings as `base` gives them), probed once per process. */
export function acceptedRange(name: string, base: Readonly<Record<string, string>>): AcceptedRange {
  const known = ranges.get(name);
  if (known) return known;
  const ok = (value: number) => !settingProblems({ ...base, [name]: String(value) }).some((p) => p.name === name);
  // Some accepted value (a power of ten), then up by doubling to the first refused, then bisect.
  const seed = [1, 10, 100, 1_000, 10_000, 100_000, 0.1, 0.01].find(ok);
  if (seed === undefined) throw new Error(`simulate: ${name} accepts no number tried: not a numeric setting the simulator can draw`);
  let hi = seed;
  while (ok(hi * 2) && hi < 1e12) hi *= 2;
  const integer = !ok(seed + 0.5);
  let refused = hi * 2;
  while (refused - hi > (integer ? 1 : hi * 1e-9)) {
    const mid = integer ? Math.floor((hi + refused) / 2) : (hi + refused) / 2;
    if (ok(mid)) hi = mid;
    else refused = mid;
  }
  let min: number;
  let minExclusive = false;
  if (ok(0)) min = 0;
  else if (!integer && ok(1e-9)) [min, minExclusive] = [0, true];
  else {
    let lo = 0;
    let accepted = seed;
    while (accepted - lo > 1) {
      const mid = Math.floor((lo + accepted) / 2);
      if (ok(mid)) accepted = mid;
      else lo = mid;
    }
    min = accepted;
  }
  const range = { min, minExclusive, max: hi, integer };
  ranges.set(name, range);
  return range;
}

/** One value from a range: log-uniform where it spans orders of magnitude (x100 or more), else uniform. */
export function drawFromRange(random: Random, range: AcceptedRange, floor?: number, cap?: number): number {
  // A minimum of 0 (or just above it) has no log scale: the floor (default: a ten-thousandth of the maximum) stands in.
  let lo = range.minExclusive || range.min === 0 ? (floor ?? range.max / 1e4) : range.min;
  if (floor !== undefined) lo = Math.max(lo, floor);
  const hi = Math.min(range.max, cap ?? Number.POSITIVE_INFINITY);
  const u = random.next();
  const value = hi / Math.max(lo, 1e-12) >= 100 && lo > 0 ? Math.exp(Math.log(lo) + u * (Math.log(hi) - Math.log(lo))) : lo + u * (hi - lo);
  if (range.integer) return Math.min(hi, Math.max(Math.ceil(lo), Math.round(value)));
  return Math.round(value * 1000) / 1000;
}

/** The drawn settings of one try (only those not kept at their default). */
export function drawOnce(random: Random, base: Readonly<Record<string, string>>): Record<string, string> {
  const drawn: Record<string, string> = {};
  for (const { name, simCap, floor } of DRAWN) {
    // Two draws per setting whatever is kept, so that one setting's choice never moves another's.
    const keep = random.chance(KEEP_DEFAULT);
    const value = drawFromRange(random.fork(), acceptedRange(name, base), floor, simCap);
    if (!keep) drawn[name] = String(value);
  }
  return drawn;
}

/**
 * What the app refuses at start for these settings: `loadSettings` (the schema and its cross-setting rules) and the
 * start-time checks the host runs before the payments functions (src/app/host.ts `paymentsFunctions`, appContext).
 * Undefined when the app starts.
 */
export function startRefusal(env: Readonly<Record<string, string>>): string | undefined {
  try {
    const settings: Settings = loadSettings(env);
    assertRetentionCoversRedelivery(settings);
    assertPatienceCoversCharge(settings);
    assertRetryBudgetWithinRetention(settings);
    assertLeaseWithinRetention(settings);
    return undefined;
  } catch (error) {
    if (error instanceof ConfigurationError) return error.message;
    throw error;
  }
}

/** Settings drawn for a schedule: the first try the app starts with, and how many tries it refused at start. */
export interface DrawnSettings {
  readonly values: Readonly<Record<string, string>>;
  readonly refusedAtStart: number;
  /** The first refusal's message (what a combination hit), for the report. */
  readonly firstRefusal?: string;
}

/** Most tries before a schedule falls back to the defaults (counted as refused too). */
const MAX_TRIES = 50;

/** Draws until the app starts; `stream(n)` is try n's own stream (`Random.of(seed, 'settings#n')`). */
export function drawSettings(stream: (attempt: number) => Random, base: Readonly<Record<string, string>>): DrawnSettings {
  let firstRefusal: string | undefined;
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const values = drawOnce(stream(attempt), base);
    const refusal = startRefusal({ ...base, ...values });
    if (refusal === undefined) return { values, refusedAtStart: attempt, firstRefusal };
    firstRefusal ??= refusal;
  }
  return { values: {}, refusedAtStart: MAX_TRIES, firstRefusal };
}
