import type { Random } from './random';

/**
 * Provider profiles (issue 62 item 1): how each provider family behaves around the app's HTTP contract
 * (`POST /v1/charges` with `Idempotency-Key`, `GET /v1/charges?idempotency_key=K`, the list by time window). Each
 * deviation is documented with its source in docs/simulation-faults.md ("Provider profiles"); the facts come from
 * /work/shared/research/provider-semantics.md. A schedule of the current world draws one profile and, within it, the
 * behaviours a profile allows (a look-up's lag, a 4xx window, slow POSTs) from its own streams.
 *
 * `legacy` is the provider as it stood before the profiles (Stripe-like, kind): the kept regression seeds run on it so
 * that they keep their schedules.
 */

const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

export const PROFILE_NAMES = ['stripe-like', 'adyen-like', 'paypal-like', 'checkout-like'] as const;
export type ProfileName = (typeof PROFILE_NAMES)[number] | 'legacy';

/** How a look-up by key answers: none (404), read-after-write, or a search index that lags. */
export type LookupKind = 'none' | 'consistent' | 'lagging';

export interface ProviderProfile {
  readonly name: ProfileName;
  /** How long a key is remembered after its first call; then a same-key request is a new charge. */
  readonly keyMemoryMs: number;
  /** The look-up by key (`GET /v1/charges?idempotency_key=`), as the provider offers it (or a choice drawn per schedule). */
  readonly lookup: readonly LookupKind[];
  /** A lagging look-up's lag: normally up to `normalMs`; in an indexing outage (drawn per schedule) up to `outageMs`. */
  readonly lookupLag: { readonly normalMs: number; readonly outageMs: number };
  /** The list by time window (`GET /v1/charges?created_gte=...`): its lag, or undefined when the provider has none (404). */
  readonly listLagMs?: { readonly minMs: number; readonly maxMs: number };
  /** The answer to a call whose key is in flight. */
  readonly conflict: readonly ConflictAnswer[];
  /** A 5xx after the endpoint ran is the key's saved response (Stripe), or nothing is saved and a retry re-executes (Checkout.com). */
  readonly failuresSaved: boolean;
  /** A replay answers the charge's current state (PayPal, Braintree) rather than the frozen first body (Stripe). */
  readonly replayCurrent: boolean;
  /** A key reused with another body: 422 (Stripe, IETF), or (not documented: the harsh reading) the key's charge replayed. */
  readonly mismatch: 'reject-422' | 'replay';
  /** Share of charges that succeed non-final (`processing`, `Pending`, `PENDING`) and how long they stay so. */
  readonly pending?: { readonly maxShare: number; readonly minMs: number; readonly maxMs: number };
  /** A fresh charge's work may outlast the client: up to this long (no provider documents a server-side limit). */
  readonly slowPostMaxMs: number;
  /** Where the key memory, the look-up and the rest come from (docs/simulation-faults.md has the quotes). */
  readonly source: string;
}

/** The answer to a same-key call while the first is in flight. */
export interface ConflictAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

const STRIPE_409: ConflictAnswer = {
  status: 409,
  body: { error: { type: 'idempotency_error', code: 'idempotency_key_in_use', message: 'a request with this key is in flight' } },
};
const ADYEN_704 = (status: number): ConflictAnswer => ({
  status,
  body: { status, errorCode: '704', message: 'request already processed or in progress', errorType: 'validation' },
  headers: { 'transient-error': 'true' },
});

export const PROFILES: Readonly<Record<ProfileName, ProviderProfile>> = {
  legacy: {
    name: 'legacy',
    keyMemoryMs: DAY_MS,
    lookup: ['none', 'consistent'],
    lookupLag: { normalMs: 60 * SECOND_MS, outageMs: 60 * SECOND_MS },
    listLagMs: { minMs: 0, maxMs: 0 },
    conflict: [STRIPE_409],
    failuresSaved: true,
    replayCurrent: false,
    mismatch: 'reject-422',
    slowPostMaxMs: 60 * SECOND_MS,
    source: 'the simulator before issue 62 (Stripe v1, kind): kept for the regression seeds',
  },
  'stripe-like': {
    name: 'stripe-like',
    keyMemoryMs: DAY_MS,
    // No look-up by key on Stripe; the search by metadata lags (<1 min, up to 1 h in outages). Declared: none or by-key.
    lookup: ['none', 'lagging'],
    lookupLag: { normalMs: MINUTE_MS, outageMs: HOUR_MS },
    // `GET /v1/charges` with created[gte]/[lt]: read-after-write.
    listLagMs: { minMs: 0, maxMs: 0 },
    conflict: [STRIPE_409],
    failuresSaved: true,
    replayCurrent: false,
    mismatch: 'reject-422',
    // `processing` (bank debits): up to a few days.
    pending: { maxShare: 0.2, minMs: MINUTE_MS, maxMs: 3 * DAY_MS },
    slowPostMaxMs: 10 * MINUTE_MS,
    source: 'S-idem (24 h, saved 500s, 409), S-low (pre-execution 401/400/429), S-search (search lag), stripe-node ChargeListParams (list)',
  },
  'adyen-like': {
    name: 'adyen-like',
    keyMemoryMs: 7 * DAY_MS,
    lookup: ['none'],
    lookupLag: { normalMs: 0, outageMs: 0 },
    listLagMs: undefined,
    conflict: [ADYEN_704(409), ADYEN_704(422)],
    failuresSaved: true,
    replayCurrent: false,
    mismatch: 'reject-422',
    // `Received`/`Pending`; "status can change after you get the result code".
    pending: { maxShare: 0.2, minMs: MINUTE_MS, maxMs: DAY_MS },
    slowPostMaxMs: 150 * SECOND_MS,
    source: 'A-idem (7 d minimum, 409/422 errorCode 704 transient-error), Adyen has no payment look-up or list API (reports only), POS time-outs 120/150 s',
  },
  'paypal-like': {
    name: 'paypal-like',
    keyMemoryMs: 6 * HOUR_MS,
    // No look-up by PayPal-Request-Id; Transaction Search: up to 3 h.
    lookup: ['none', 'lagging'],
    lookupLag: { normalMs: HOUR_MS, outageMs: 3 * HOUR_MS },
    listLagMs: { minMs: 0, maxMs: 3 * HOUR_MS },
    conflict: [{ status: 500, body: { name: 'INTERNAL_SERVER_ERROR', message: 'simultaneous request with the same PayPal-Request-Id' } }],
    failuresSaved: false,
    replayCurrent: true,
    mismatch: 'replay',
    // capture `PENDING` ("Do not fulfill the order"): duration not documented.
    pending: { maxShare: 0.2, minMs: MINUTE_MS, maxMs: DAY_MS },
    slowPostMaxMs: 10 * MINUTE_MS,
    source:
      'P-spec checkout_orders_v2 (6 h), P-idem (latest status on replay, simultaneous "might fail", 5xx retryable), P-spec reporting_transactions_v1 (3 h)',
  },
  'checkout-like': {
    name: 'checkout-like',
    keyMemoryMs: DAY_MS,
    // GET /payments?reference= (Beta): read as consistent.
    lookup: ['consistent', 'none'],
    lookupLag: { normalMs: 0, outageMs: 0 },
    // Financial Actions by Date Range: refreshed between 00:00 and 03:00 the next day.
    listLagMs: { minMs: 0, maxMs: 27 * HOUR_MS },
    conflict: [
      { status: 409, body: { error_type: 'request_in_progress' } },
      { status: 429, body: { error_type: 'too_many_requests', error_codes: ['duplicate_request'] } },
    ],
    failuresSaved: false,
    replayCurrent: false,
    mismatch: 'reject-422',
    pending: { maxShare: 0.1, minMs: MINUTE_MS, maxMs: DAY_MS },
    slowPostMaxMs: 5 * MINUTE_MS,
    source: 'C-idem (24 h, only 2xx cached: a retry after a 4xx/5xx is reattempted), C-dup (409), checkout-sdk-php (429), Reports API (list lag)',
  },
};

/**
 * What one schedule's provider is: the profile and what was drawn within it. Every draw comes from `random` (the
 * schedule's own `provider-profile` stream), so adding a dimension elsewhere moves none of these.
 */
export interface ProviderWorld {
  readonly profile: ProviderProfile;
  readonly lookup: LookupKind;
  /** A lagging look-up's lag at a time (ms): normal lag, or the outage's inside its window. */
  readonly lookupLagMs: (atMs: number) => number;
  readonly listLagMs: number;
  /** Share of fresh charges that stay in flight past the client (drawn: 0, 5 %, 20 %). */
  readonly slowShare: number;
  /** Share of charges that succeed pending. */
  readonly pendingShare: number;
  /** A pre-execution window (a rotated secret, a proxy, a wrong URL during a deploy): every call answers `status`. */
  readonly refusalWindow?: { readonly fromMs: number; readonly toMs: number; readonly status: 400 | 401 | 403 | 404 };
  /** Share of calls the rate limiter answers 429 (before the idempotency layer). */
  readonly rateLimitShare: number;
  /** A look-up (GET) takes up to this long (a slow search): drawn per schedule. */
  readonly lookupSlowMaxMs: number;
  /** The longest a charge may stay invisible to the look-up in this schedule (what a deployer would declare). */
  readonly worstLookupLagMs: number;
}

/** Draws a provider for a schedule of the current world; `startMs` and `faultPhaseMs` place the windows. */
export function drawProviderWorld(random: Random, startMs: number, faultPhaseMs: number): ProviderWorld {
  const profile = PROFILES[random.pick(PROFILE_NAMES)];
  const lookup = random.pick(profile.lookup);
  const normalLagMs = profile.lookupLag.normalMs > 0 ? random.logBetween(1_000, profile.lookupLag.normalMs) : 0;
  const outageLag = random.chance(0.3) && profile.lookupLag.outageMs > 0;
  const lagFromMs = startMs + random.logBetween(1_000, faultPhaseMs / 2);
  const lagToMs = lagFromMs + random.logBetween(10 * MINUTE_MS, 6 * HOUR_MS);
  const outageLagMs = outageLag ? random.logBetween(Math.max(normalLagMs, 1_000), profile.lookupLag.outageMs) : normalLagMs;
  const listLagMs = profile.listLagMs && profile.listLagMs.maxMs > 0 ? random.logBetween(Math.max(1, profile.listLagMs.minMs), profile.listLagMs.maxMs) : 0;
  const slowShare = random.pick([0, 0.05, 0.2]);
  const pendingShare = profile.pending ? random.pick([0, profile.pending.maxShare / 2, profile.pending.maxShare]) : 0;
  const refusal = random.chance(0.4);
  const refusalFromMs = startMs + random.logBetween(1_000, faultPhaseMs / 2);
  const refusalStatus = random.pick([401, 401, 403, 404, 400] as const);
  const refusalToMs = refusalFromMs + random.logBetween(MINUTE_MS, 2 * HOUR_MS);
  const rateLimitShare = random.pick([0, 0.02, 0.1]);
  const lookupSlowMaxMs = random.pick([500, 10 * SECOND_MS, 150 * SECOND_MS]);
  return {
    profile,
    lookup,
    lookupLagMs: (atMs) => (lookup !== 'lagging' ? 0 : atMs >= lagFromMs && atMs < lagToMs ? outageLagMs : normalLagMs),
    listLagMs,
    slowShare,
    pendingShare,
    refusalWindow: refusal ? { fromMs: refusalFromMs, toMs: refusalToMs, status: refusalStatus } : undefined,
    rateLimitShare,
    lookupSlowMaxMs,
    worstLookupLagMs: lookup === 'lagging' ? Math.max(normalLagMs, outageLagMs) : 0,
  };
}

/** The provider of the world before the profiles: the look-up as drawn then, its lag 60 s or none. */
export function legacyProviderWorld(lookup: 'none' | 'by-key', lookupLagMs: number): ProviderWorld {
  return {
    profile: PROFILES.legacy,
    lookup: lookup === 'none' ? 'none' : 'consistent',
    lookupLagMs: () => lookupLagMs,
    listLagMs: 0,
    slowShare: 0,
    pendingShare: 0,
    rateLimitShare: 0,
    lookupSlowMaxMs: 500,
    worstLookupLagMs: lookupLagMs,
  };
}

/** What the deployer declares for this provider (`PAYMENT_PROVIDER_LOOKUP`, `PAYMENT_PROVIDER_KEY_MEMORY_HOURS`). */
export function declaredSettings(world: ProviderWorld): Record<string, string> {
  return {
    PAYMENT_PROVIDER_LOOKUP: world.lookup === 'none' ? 'none' : 'by-key',
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: String(world.profile.keyMemoryMs / HOUR_MS),
  };
}
