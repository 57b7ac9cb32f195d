import { KEY_MEMORY_TRUSTED_SHARE, PROVIDER_LOOKUPS, keyMemoryGuardOf, planProviderCall, type ProviderCapability } from '../../src/payments/providerLookup';
import { loadSettings } from '../../src/config/settings';

const HOUR = 3_600_000;
const stripe: ProviderCapability = { lookup: 'none', keyMemoryHours: 24 };
const byKey: ProviderCapability = { lookup: 'by-key', keyMemoryHours: 24 };
const noMemory: ProviderCapability = { lookup: 'by-key', keyMemoryHours: 0 };
const within = 24 * HOUR * KEY_MEMORY_TRUSTED_SHARE;

/** Every capability x every case a run can be in before a provider call. */
const cases = [
  { name: 'first call, clean begin, fresh key', c: { round: 0, entityUncertain: false, keyAgeMs: 1_000 }, plan: ['charge', 'charge', 'lookUpFirst'] },
  { name: 'first call, clean begin, old key', c: { round: 0, entityUncertain: false, keyAgeMs: 30 * 24 * HOUR }, plan: ['charge', 'charge', 'lookUpFirst'] },
  { name: 'a retry within the key memory', c: { round: 1, entityUncertain: false, keyAgeMs: 60_000 }, plan: ['charge', 'charge', 'lookUpFirst'] },
  { name: 'a retry at the edge of the trusted memory', c: { round: 2, entityUncertain: false, keyAgeMs: within }, plan: ['charge', 'charge', 'lookUpFirst'] },
  { name: 'a retry just past the trusted memory', c: { round: 2, entityUncertain: false, keyAgeMs: within + 1 }, plan: ['hold', 'lookUpFirst', 'lookUpFirst'] },
  { name: 'an uncertain begin within the memory', c: { round: 0, entityUncertain: true, keyAgeMs: 2 * HOUR }, plan: ['charge', 'charge', 'lookUpFirst'] },
  { name: 'an uncertain begin after 30 days', c: { round: 0, entityUncertain: true, keyAgeMs: 30 * 24 * HOUR }, plan: ['hold', 'lookUpFirst', 'lookUpFirst'] },
  { name: 'a retry, key age unknown', c: { round: 1, entityUncertain: false }, plan: ['hold', 'lookUpFirst', 'lookUpFirst'] },
] as const;

describe('planProviderCall: the declared capability decides re-send, look-up or hold', () => {
  test.each(cases.flatMap((k) => [stripe, byKey, noMemory].map((p, i) => [k.name, p, k.c, k.plan[i]] as const)))('%s, %o -> %s', (_name, provider, c, plan) => {
    expect(planProviderCall(provider, c).action).toBe(plan);
  });

  test('a hold says why, naming both settings', () => {
    const plan = planProviderCall(stripe, { round: 1, entityUncertain: true, keyAgeMs: 25 * HOUR });
    expect(plan).toEqual({
      action: 'hold',
      reason: expect.stringMatching(/1500 min old.*PAYMENT_PROVIDER_KEY_MEMORY_HOURS 24.*PAYMENT_PROVIDER_LOOKUP is none/),
    });
  });

  test('runs started before the capability keep their old mode on replay', () => {
    const c = [
      { round: 0, entityUncertain: false },
      { round: 0, entityUncertain: true },
      { round: 2, entityUncertain: false },
    ];
    expect(c.map((x) => planProviderCall('uncertain', x).action)).toEqual(['charge', 'lookUpFirst', 'lookUpFirst']);
    expect(c.map((x) => planProviderCall('always', x).action)).toEqual(['lookUpFirst', 'lookUpFirst', 'lookUpFirst']);
    expect(c.map((x) => planProviderCall('off', x).action)).toEqual(['charge', 'charge', 'charge']);
  });
});

describe('PAYMENT_PROVIDER_LOOKUP and PAYMENT_PROVIDER_KEY_MEMORY_HOURS settings', () => {
  const base = { IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' };
  test("default none and 24 h (Stripe's); each look-up accepted; anything else refused naming the setting", () => {
    expect(loadSettings(base)).toMatchObject({ PAYMENT_PROVIDER_LOOKUP: 'none', PAYMENT_PROVIDER_KEY_MEMORY_HOURS: 24 });
    for (const lookup of PROVIDER_LOOKUPS) expect(loadSettings({ ...base, PAYMENT_PROVIDER_LOOKUP: lookup }).PAYMENT_PROVIDER_LOOKUP).toBe(lookup);
    expect(() => loadSettings({ ...base, PAYMENT_PROVIDER_LOOKUP: 'uncertain' })).toThrow(/PAYMENT_PROVIDER_LOOKUP/);
    expect(() => loadSettings({ ...base, PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '-1' })).toThrow(/PAYMENT_PROVIDER_KEY_MEMORY_HOURS/);
  });

  test('a provider that keeps no keys needs a look-up: refused at start otherwise', () => {
    expect(() => loadSettings({ ...base, PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '0' })).toThrow(
      /PAYMENT_PROVIDER_KEY_MEMORY_HOURS=0.*needs PAYMENT_PROVIDER_LOOKUP=by-key/,
    );
    expect(loadSettings({ ...base, PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '0', PAYMENT_PROVIDER_LOOKUP: 'by-key' }).PAYMENT_PROVIDER_KEY_MEMORY_HOURS).toBe(0);
  });
});

describe('planProviderCall: no key memory, and a key of unknown age', () => {
  test('no key memory: even a key of age 0 is looked up first (nothing is trusted)', () => {
    expect(planProviderCall({ lookup: 'by-key', keyMemoryHours: 0 }, { round: 0, entityUncertain: false, keyAgeMs: 0 })).toEqual({ action: 'lookUpFirst' });
  });

  test('a hold whose key age is unknown says so', () => {
    const plan = planProviderCall(stripe, { round: 1, entityUncertain: false });
    expect(plan.action === 'hold' && plan.reason).toMatch(/^an earlier call may have charged and cannot be checked: the key is an unknown time old, past/);
  });
});

describe('keyMemoryGuardOf: when a charge must be checked again at the call', () => {
  const now = 50 * HOUR;
  const charge = { action: 'charge' } as const;

  test('a repeat planned on the key memory: trusted until the key is 90 % of it old, then look up (by-key) or hold (none)', () => {
    const c = { round: 1, entityUncertain: false, keyAgeMs: HOUR };
    expect(keyMemoryGuardOf(byKey, c, charge, now)).toEqual({ trustedUntilMs: now - HOUR + 0.9 * 24 * HOUR, otherwise: { lookUpFirst: true } });
    expect(keyMemoryGuardOf(stripe, c, charge, now)).toEqual({
      trustedUntilMs: now - HOUR + 0.9 * 24 * HOUR,
      otherwise: { hold: expect.stringMatching(/the key is an unknown time old/) },
    });
    expect(keyMemoryGuardOf(byKey, { ...c, round: 0, entityUncertain: true }, charge, now)).toBeDefined();
  });

  test('a first call after a clean begin needs no guard; nor does a plan that does not charge', () => {
    expect(keyMemoryGuardOf(byKey, { round: 0, entityUncertain: false, keyAgeMs: HOUR }, charge, now)).toBeUndefined();
    expect(keyMemoryGuardOf(byKey, { round: 1, entityUncertain: false, keyAgeMs: 23 * HOUR }, { action: 'lookUpFirst' }, now)).toBeUndefined();
  });

  test('no key memory at all: every charge is a possible repeat, guarded from now', () => {
    const guard = keyMemoryGuardOf({ lookup: 'by-key', keyMemoryHours: 0 }, { round: 0, entityUncertain: false, keyAgeMs: 0 }, charge, now);
    expect(guard).toEqual({ trustedUntilMs: now, otherwise: { lookUpFirst: true } });
  });
});
