/**
 * Share of the declared key memory a repeated call may rely on (src/payments/providerLookup.ts): the key's age is
 * measured on our clock from the record's creation (before the first call), the provider measures its own; the rest
 * covers skew, pruning lag and a call's lease.
 */
export const KEY_MEMORY_TRUSTED_SHARE = 0.9;

/** The settings that size a call (a subset of `Settings`: this module sits below the schema, which checks them). */
export interface CallTimingSettings {
  readonly PAYMENT_PROVIDER_TIMEOUT_MS: number;
  readonly PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS: number;
  readonly PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS: number;
  readonly PAYMENT_PROVIDER_KEY_MEMORY_HOURS: number;
}

/**
 * How long a provider call announced on the record must hold it, derived from what a call can take (never a constant:
 * the call's length is a setting). A settle's look-up decides "no charge" only after the lease of every announced call
 * has lapsed (src/payments/callFence.ts), so the lease must outlast the moment any charge those calls made shows in a
 * look-up:
 *
 * ```
 *  announce        look-up (first)          POST sent               client gives up   provider done   look-up sees it
 *  |--- timeout ---|  ...  |------------- timeout ---------------|-- finish window --|--- look-up lag ---|-- margin --| lease ends
 *                          ^ the POST goes only while the lease left covers everything to its right (`postWindowMs`)
 * ```
 *
 * - `timeoutMs`: one request's client timeout (`PAYMENT_PROVIDER_TIMEOUT_MS`); a look-up-first call makes two.
 * - `finishWindowMs`: how long the provider may still be working on a charge after the client gave up
 *   (`PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS`; no provider documents its server-side limit: a declaration).
 * - `lookupLagMs`: how long before a charge shows in the look-up (`PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS`; Stripe's
 *   search: about a minute, up to an hour during outages; a by-key list that is read-after-write: 0).
 * - {@link CALL_LEASE_MARGIN_MS}: the store's write and the clock skew between the worker that calls and the one that
 *   settles.
 */
export interface CallTiming {
  readonly timeoutMs: number;
  readonly finishWindowMs: number;
  readonly lookupLagMs: number;
}

/** The store's write of the mark and the clock skew between workers (Azure's hosts: well under a few seconds). */
export const CALL_LEASE_MARGIN_MS = 30_000;

/** From the client sending a POST until any charge it makes shows in a look-up, with the margin. */
export function postWindowMs(timing: CallTiming): number {
  return timing.timeoutMs + timing.finishWindowMs + timing.lookupLagMs + CALL_LEASE_MARGIN_MS;
}

/** The lease a call is announced for: a look-up first (one request's timeout), then the POST's window. */
export function callLeaseMsOf(timing: CallTiming): number {
  return timing.timeoutMs + postWindowMs(timing);
}

/** The timing the settings declare. */
export function callTimingOf(settings: Omit<CallTimingSettings, 'PAYMENT_PROVIDER_KEY_MEMORY_HOURS'>): CallTiming {
  return {
    timeoutMs: settings.PAYMENT_PROVIDER_TIMEOUT_MS,
    finishWindowMs: Math.round(settings.PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS * 1000),
    lookupLagMs: Math.round(settings.PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS * 1000),
  };
}

/**
 * Why the settings' call timing does not fit the rest, with the numbers; undefined when it fits. A repeat of a call
 * planned on the provider's key memory is made up to the end of the trusted share of it
 * ({@link KEY_MEMORY_TRUSTED_SHARE}) and its charge may be made a lease later: the untrusted rest of the memory must
 * cover a whole call's lease, or the provider may have forgotten the key when the repeat reaches it.
 */
export function callTimingProblem(settings: CallTimingSettings): string | undefined {
  const timing = callTimingOf(settings);
  const leaseMs = callLeaseMsOf(timing);
  const memoryMs = settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS * 3_600_000;
  const untrustedMs = memoryMs * (1 - KEY_MEMORY_TRUSTED_SHARE);
  if (memoryMs > 0 && leaseMs > untrustedMs) {
    return (
      `a provider call's lease (${seconds(leaseMs)} s: 2 x PAYMENT_PROVIDER_TIMEOUT_MS ${seconds(timing.timeoutMs)} s + ` +
      `PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS ${seconds(timing.finishWindowMs)} + PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS ` +
      `${seconds(timing.lookupLagMs)} + ${seconds(CALL_LEASE_MARGIN_MS)} s margin) is longer than the part of the provider's key memory ` +
      `that is not relied on (${seconds(untrustedMs)} s: ${Math.round((1 - KEY_MEMORY_TRUSTED_SHARE) * 100) / 100} x PAYMENT_PROVIDER_KEY_MEMORY_HOURS ` +
      `${settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS}): a repeat could reach the provider after it forgot the key`
    );
  }
  return undefined;
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}
