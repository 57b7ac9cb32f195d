/**
 * The simulator's world 2 (issue 62), its pure parts: the provider's list by time window (the fixed contract the fake
 * provider and the app's client share), the settings drawn from the schema's ranges, the provider profiles.
 */
import { acceptedRange, drawFromRange, drawSettings, startRefusal } from '../../tools/simulate/drawSettings';
import { drawProviderWorld, PROFILE_NAMES, PROFILES } from '../../tools/simulate/profiles';
import type { LedgerCharge } from '../../tools/simulate/provider';
import { chargeStatusAt, listCharges } from '../../tools/simulate/providerList';
import { Random } from '../../tools/simulate/random';
import { SIM_BASE_ENV } from '../../tools/simulate/settings';

const charge = (n: number, atMs: number, extra: Partial<LedgerCharge> = {}): LedgerCharge => ({
  key: `p${n}`,
  paymentId: `p${n}`,
  customerId: 'cust-1',
  chargeId: `ch_${n}`,
  atMs,
  calledAtMs: atMs,
  amount: 100,
  currency: 'EUR',
  ...extra,
});

type Page = { data: Array<{ id: string; status: string; created: number; idempotency_key: string }>; has_more: boolean };
const query = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));

describe('the provider list by time window (GET /v1/charges?created_gte=&created_lt=&limit=)', () => {
  // Two charges at the same time (ordered by id, ch_10 after ch_9 by number), one outside the window.
  const ledger = [charge(10, 2_000), charge(9, 2_000), charge(1, 1_000), charge(3, 5_000, { pendingUntilMs: 9_000 })];

  test('ascending by (created, id), paged with starting_after, has_more until the last page', () => {
    const first = listCharges(ledger, query({ created_gte: 0, created_lt: 6_000, limit: 2 }), 10_000, 0);
    expect(first.status).toBe(200);
    const page1 = first.body as Page;
    expect(page1.data.map((c) => c.id)).toEqual(['ch_1', 'ch_9']);
    expect(page1.has_more).toBe(true);
    const page2 = listCharges(ledger, query({ created_gte: 0, created_lt: 6_000, limit: 2, starting_after: 'ch_9' }), 10_000, 0).body as Page;
    expect(page2.data.map((c) => c.id)).toEqual(['ch_10', 'ch_3']);
    expect(page2.has_more).toBe(false);
    expect(page2.data[0]).toMatchObject({ idempotency_key: 'p10', created: 2_000, status: 'succeeded' });
  });

  test('created_lt is exclusive, created_gte inclusive; a charge shows only once it is older than the lag; pending while not final', () => {
    const page = listCharges(ledger, query({ created_gte: 2_000, created_lt: 5_000, limit: 100 }), 10_000, 0).body as Page;
    expect(page.data.map((c) => c.id)).toEqual(['ch_9', 'ch_10']);
    const lagged = listCharges(ledger, query({ created_gte: 0, created_lt: 6_000, limit: 100 }), 6_000, 3_000).body as Page;
    expect(lagged.data.map((c) => c.id)).toEqual(['ch_1', 'ch_9', 'ch_10']);
    expect(chargeStatusAt(ledger[3], 8_999)).toBe('pending');
    expect(chargeStatusAt(ledger[3], 9_000)).toBe('succeeded');
  });

  test('a query outside the contract is a 400', () => {
    expect(listCharges(ledger, query({ created_gte: 0, created_lt: 1, limit: 101 }), 0, 0).status).toBe(400);
    expect(listCharges(ledger, query({ created_lt: 1, limit: 1 }), 0, 0).status).toBe(400);
    expect(listCharges(ledger, query({ created_gte: 0, created_lt: 1, limit: 1, starting_after: 'ch_404' }), 0, 0).status).toBe(400);
  });
});

describe('settings drawn from the schema', () => {
  test('the ranges are read off the schema', () => {
    expect(acceptedRange('PAYMENT_PROVIDER_TIMEOUT_MS', SIM_BASE_ENV)).toEqual({ min: 100, minExclusive: false, max: 120_000, integer: true });
    // With the default delays (5 s doubling to 300 s) the schema accepts a budget of at most 64 provider rounds (~295 min).
    const budget = acceptedRange('PAYMENT_RETRY_BUDGET_MINUTES', SIM_BASE_ENV);
    expect(budget).toMatchObject({ min: 0, minExclusive: true, integer: false });
    expect(budget.max).toBeCloseTo(295.25, 0);
  });

  test('a drawn value stays in its range (and the floor and cap); log-uniform across orders of magnitude', () => {
    const range = acceptedRange('PAYMENT_PROVIDER_TIMEOUT_MS', SIM_BASE_ENV);
    const random = new Random(7);
    const values = Array.from({ length: 400 }, () => drawFromRange(random, range));
    expect(Math.min(...values)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...values)).toBeLessThanOrEqual(120_000);
    // Log-uniform over 100..120,000: about a third below 1,100 (uniform would put under 1 % there).
    expect(values.filter((v) => v < 1_100).length).toBeGreaterThan(80);
    const capped = Array.from({ length: 50 }, () => drawFromRange(random, acceptedRange('IDEMPOTENCY_RETENTION_DAYS', SIM_BASE_ENV), undefined, 3));
    expect(Math.max(...capped)).toBeLessThanOrEqual(3);
  });

  test('a combination refused at start is counted and drawn again; what is kept starts', () => {
    let refused = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const drawn = drawSettings((n) => Random.of(seed, `settings#${n}`), SIM_BASE_ENV);
      refused += drawn.refusedAtStart;
      expect(startRefusal({ ...SIM_BASE_ENV, ...drawn.values })).toBeUndefined();
    }
    expect(refused).toBeGreaterThan(0);
    expect(startRefusal({ ...SIM_BASE_ENV, IDEMPOTENCY_RETENTION_DAYS: '0.1' })).toMatch(/IDEMPOTENCY_RETENTION_DAYS/);
  });
});

describe('provider profiles', () => {
  test('each profile names its sources; the draws cover every profile', () => {
    for (const name of PROFILE_NAMES) expect(PROFILES[name].source.length).toBeGreaterThan(20);
    const drawn = new Set(Array.from({ length: 200 }, (_, seed) => drawProviderWorld(Random.of(seed, 'provider-profile'), 0, 30 * 3_600_000).profile.name));
    expect([...drawn].sort()).toEqual([...PROFILE_NAMES].sort());
  });

  test('an Adyen-like provider has no look-up and no list; a PayPal-like one forgets keys after 6 h', () => {
    expect(PROFILES['adyen-like'].lookup).toEqual(['none']);
    expect(PROFILES['adyen-like'].listLagMs).toBeUndefined();
    expect(PROFILES['paypal-like'].keyMemoryMs).toBe(6 * 3_600_000);
  });
});
