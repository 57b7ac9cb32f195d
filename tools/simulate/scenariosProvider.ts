import type { PaymentRequested } from '../../src/payments/schema';
import type { SimApp } from './app';
import { PROFILES, type LookupKind, type ProfileName, type ProviderProfile, type ProviderWorld } from './profiles';
import type { Scenario } from './scenarioTypes';
import { startRefusal } from './drawSettings';
import { SIM_BASE_ENV } from './settings';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/**
 * Directed schedules of world 2 (issue 62): the provider's behaviours that lose money on main's code, each placed at
 * the moment that makes it happen. Each names the profile it needs (profiles.ts; sources in docs/simulation-faults.md)
 * and takes nothing random from the profile's draws (no 4xx window, no 429, no slow POSTs but the forced ones).
 */

/** The provider a scenario needs: `name`'s profile with `patch`, none of the drawn behaviours unless asked. */
function providerAs(
  name: ProfileName,
  patch: { lookup: LookupKind; lagMs?: number; profile?: Partial<ProviderProfile>; pendingShare?: number },
): (drawn: ProviderWorld) => ProviderWorld {
  return (drawn) => ({
    ...drawn,
    profile: { ...PROFILES[name], ...patch.profile },
    lookup: patch.lookup,
    lookupLagMs: () => patch.lagMs ?? 0,
    refusalWindow: undefined,
    rateLimitShare: 0,
    slowShare: 0,
    pendingShare: patch.pendingShare ?? 0,
    lookupSlowMaxMs: 500,
    worstLookupLagMs: patch.lookup === 'lagging' ? (patch.lagMs ?? 0) : 0,
  });
}

/** The premise every scenario of a setting shares: the app starts with the scenario's settings (else it is no schedule). */
const starts = (scenario: { settings?: Readonly<Record<string, string>> }, app: SimApp): string | undefined => {
  const refusal = startRefusal({
    ...SIM_BASE_ENV,
    PAYMENT_PROVIDER_LOOKUP: app.settings.PAYMENT_PROVIDER_LOOKUP,
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: String(app.settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS),
    ...scenario.settings,
  });
  return refusal && `the app refuses these settings at start: ${refusal.slice(0, 200)}`;
};

/** The payment's record was completed at least once (the schedule got to a result). */
const settled = (app: SimApp, paymentId: string): string | undefined =>
  app.steps.completions.some((c) => c.key === paymentId) ? undefined : 'the payment was never recorded';

/** A charge call of the payment answered `status` after a charge of it was made (the fault the scenario places). */
const answeredAfterCharge = (app: SimApp, paymentId: string, status: number): string | undefined => {
  const charged = app.provider.ledger.find((c) => c.paymentId === paymentId);
  if (!charged) return 'the payment was never charged';
  return app.provider.calls.some((c) => c.kind === 'charge' && c.key === paymentId && c.httpStatus === status && c.atMs >= charged.calledAtMs)
    ? undefined
    : `no call of the payment was answered ${status} after its charge`;
};

const CALL_LEASE_SETTINGS = {
  PAYMENT_PROVIDER_TIMEOUT_MS: '120000',
  // Declared conservatively (no key memory relied on: every call looks up first), accepted with a look-up by key.
  PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '0',
  PAYMENT_RETRY_BUDGET_MINUTES: '1',
  // The charge-patience rule at start wants deliveries that outlast 3 calls of 120 s.
  IDEMPOTENCY_LEASE_SECONDS: '600',
};

export const PROVIDER_SCENARIOS = {
  'call-lease-lapses': {
    description:
      'issue 62 F1: PAYMENT_PROVIDER_TIMEOUT_MS 120 s (accepted), a look-up-first call (key memory declared 0): the call is announced (a 3 min lease), its look-up takes 110 s, then it POSTs; the provider works 10 min (the client gives up at 120 s); the lease lapses while the provider works; the settle looks up (read-after-write), finds nothing yet, writes failed exactly; the charge lands',
    world: 2,
    lookup: 'by-key',
    settings: CALL_LEASE_SETTINGS,
    provider: providerAs('checkout-like', { lookup: 'consistent' }),
    script(app) {
      app.provider.forceLookupMs.push(110_000);
      app.provider.forceInFlightMs.push(10 * MINUTE_MS);
    },
    premise(app, paymentId) {
      if (app.provider.forceLookupMs.length > 0) return 'the look-up that takes 110 s was never made';
      return settled(app, paymentId);
    },
  },
  'search-lags': {
    description:
      'issue 62 F1 at the default 10 s timeout: Stripe-like, the look-up is a search that lags 30 min (Stripe: up to an hour in outages); a provider outage until the round that charges (its answer lost), then again past the budget; the settle, 5 min after the last round, finds nothing and writes failed while the charge exists',
    world: 2,
    lookup: 'by-key',
    provider: providerAs('stripe-like', { lookup: 'lagging', lagMs: 30 * MINUTE_MS }),
    script(app, world) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 50 * MINUTE_MS });
      app.provider.forceLostAnswers = 1;
      app.provider.afterCharge = () => {
        app.provider.afterCharge = undefined;
        app.provider.setOutage({ fromMs: world.nowMs(), toMs: world.nowMs() + 2 * HOUR_MS });
      };
    },
    premise(app, paymentId) {
      if (app.provider.forceLostAnswers > 0 || app.provider.afterCharge) return 'the charge whose answer is lost, then the outage, did not happen';
      return settled(app, paymentId);
    },
  },
  'pending-reads-none': {
    description:
      "issue 62 F1: Stripe-like, the charge succeeds non-final (`processing` for 3 h: bank debits); the POST answers 201 with status pending (the client reads it as transient), every replay the same frozen body, the budget is spent; the settle's look-up lists the key's charge as pending, which reads as none: failed, while the charge completes",
    world: 2,
    lookup: 'by-key',
    provider: providerAs('stripe-like', {
      lookup: 'lagging',
      lagMs: 1_000,
      pendingShare: 1,
      profile: { pending: { maxShare: 1, minMs: 3 * HOUR_MS, maxMs: 3 * HOUR_MS + 1 } },
    }),
    script() {},
    premise(app, paymentId) {
      if (!app.provider.ledger.some((c) => c.paymentId === paymentId && c.pendingUntilMs !== undefined)) return 'no charge of the payment was pending';
      return settled(app, paymentId);
    },
  },
  'refused-after-charge': {
    description:
      'issue 62 F2: Stripe-like, no look-up: round 0 charges and its answer is lost; the API secret is rotated for 10 min (every call answers 401 before the idempotency layer); round 1 gets the 401 and the payment is recorded rejected for good, while the customer is charged',
    world: 2,
    lookup: 'none',
    provider: providerAs('stripe-like', { lookup: 'none' }),
    script(app, world) {
      app.provider.forceLostAnswers = 1;
      app.provider.afterCharge = () => {
        app.provider.afterCharge = undefined;
        app.provider.setRefusal({ fromMs: world.nowMs(), toMs: world.nowMs() + 10 * MINUTE_MS, status: 401 });
      };
    },
    premise: (app, paymentId) => answeredAfterCharge(app, paymentId, 401) ?? settled(app, paymentId),
  },
  'conflict-422': {
    description:
      "issue 62 (Adyen): round 0's charge stays in flight 60 s (the client gives up at 10 s); round 1 gets Adyen's answer for a key in flight, 422 errorCode 704 with transient-error: true, which the client reads as a key reused with another body: rejected for good; the charge lands",
    world: 2,
    lookup: 'none',
    provider: providerAs('adyen-like', { lookup: 'none', profile: { conflict: [PROFILES['adyen-like'].conflict[1]] } }),
    script(app) {
      app.provider.forceInFlightMs.push(60_000);
    },
    premise: (app, paymentId) =>
      (app.provider.calls.some((c) => c.kind === 'charge' && c.key === paymentId && c.httpStatus === 422) ? undefined : 'no call was answered 422') ??
      settled(app, paymentId),
  },
  'failure-not-cached': {
    description:
      'issue 62 (Checkout.com caches only 2xx): round 0 charges and the endpoint then answers 500, which is not saved for the key; round 1 (the key young: the plan relies on the key memory) is reattempted by the provider: a second charge',
    world: 2,
    lookup: 'by-key',
    provider: providerAs('checkout-like', { lookup: 'consistent' }),
    script(app) {
      app.provider.forceFailAfterCharge = 1;
    },
    premise(app, paymentId) {
      return app.provider.calls.some((c) => c.key === paymentId && c.httpStatus === 500) ? undefined : 'no charge call was answered 500';
    },
  },
  'short-retry-delays': {
    description:
      'issue 62 (settings): PAYMENT_RETRY_MAX_DELAY_SECONDS 2 and PAYMENT_RETRY_BUDGET_MINUTES 600, both accepted; a provider outage of 3 h: the run makes a round every 2 s, its history grows past the bound (the worker replays it whole at each step)',
    world: 2,
    lookup: 'by-key',
    settings: { PAYMENT_RETRY_MAX_DELAY_SECONDS: '2', PAYMENT_RETRY_BUDGET_MINUTES: '600' },
    provider: providerAs('stripe-like', { lookup: 'lagging', lagMs: 1_000 }),
    script(app, world) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 3 * HOUR_MS });
    },
    premise(app) {
      return starts({ settings: { PAYMENT_RETRY_MAX_DELAY_SECONDS: '2', PAYMENT_RETRY_BUDGET_MINUTES: '600' } }, app);
    },
  },
  'producer-reuse': {
    description:
      "issue 62 item 5: a producer reuses payment id p1 for another payment (another customer, the same amount) 27 h after the first was charged: its record has expired and been swept, the provider (Checkout.com-like, 24 h) has forgotten the key; the second payment's rounds meet a provider outage past the budget; its settle looks the key up and finds the first payment's charge (same amount and currency): recorded succeeded with another customer's charge",
    world: 2,
    lookup: 'by-key',
    provider: providerAs('checkout-like', { lookup: 'consistent' }),
    script(app, world, paymentId) {
      world.at(world.startMs + 27 * HOUR_MS, () => {
        const first = app.steps.sent.get(paymentId)![0];
        const body = reusedBody(first);
        app.steps.reuse(paymentId, body, world.nowMs());
        app.provider.setOutage({ fromMs: world.nowMs(), toMs: world.nowMs() + 2 * HOUR_MS });
        world.log(`producer: payment id ${paymentId} reused for another payment (${body.customerId})`);
        void app.bus.send(paymentId, body);
      });
    },
    premise(app, paymentId) {
      if (app.provider.ledger.filter((c) => c.paymentId === paymentId).length === 0) return 'the first payment was not charged';
      const second = app.steps.completions.filter((c) => c.key === paymentId).length;
      return second >= 2 ? undefined : "the reused id's payment was never recorded";
    },
  },
  'operator-retry-after-expiry': {
    description:
      "issue 62 item 5: a provider outage past the budget, nothing charged (the settle's look-up finds nothing: failed, alerted); the operator retries the payment 1 s after its record's retention lapsed (before the sweep), when the key's first call is 25 h old (past Stripe's 24 h memory): the retry must count the key's age from its first call (the record's creation), look up, and charge once",
    world: 2,
    lookup: 'by-key',
    provider: providerAs('stripe-like', { lookup: 'lagging', lagMs: 1_000 }),
    script(app, world, paymentId) {
      app.provider.setOutage({ fromMs: world.startMs, toMs: world.startMs + 2 * HOUR_MS });
      // Once the record says failed: retry it 1 s after its retention lapses (the sweep runs at the next tick).
      let planned = false;
      const onWrite = app.store.onWrite;
      app.store.onWrite = (operation) => {
        onWrite?.(operation);
        const record = app.record(paymentId);
        if (planned || record?.status !== 'COMPLETED') return;
        planned = true;
        world.at(record.retentionExpiresAtMs + 1_000, () => void app.operatorRetry(paymentId, false));
      };
    },
    premise(app, paymentId) {
      const retriedMs = app.retried.get(paymentId);
      if (retriedMs === undefined) return 'the operator did not retry';
      if (retriedMs - app.world.startMs < app.provider.keyMemoryMs) return "the operator retried inside the key's memory";
      return app.provider.ledger.some((c) => c.paymentId === paymentId) ? undefined : 'the retry did not charge';
    },
  },
} satisfies Record<string, Scenario>;

/** The second payment a producer sends under a reused id: another customer, the same amount and currency. */
export function reusedBody(first: PaymentRequested): PaymentRequested {
  return { ...first, customerId: `${first.customerId}-reused` };
}
