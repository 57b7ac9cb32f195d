import { PROVIDER_LOOKUP_MODES, shouldLookUp, type ProviderLookupMode } from '../../src/payments/providerLookup';
import { loadSettings } from '../../src/config/settings';

/** `PAYMENT_PROVIDER_LOOKUP`: every mode x every case a run can be in before a provider call. */
const cases = [
  { name: 'first call after a clean begin', round: 0, entityUncertain: false },
  { name: 'first call after an uncertain begin', round: 0, entityUncertain: true },
  { name: 'a retry after a transient failure', round: 1, entityUncertain: false },
  { name: 'a later retry, uncertain begin', round: 3, entityUncertain: true },
] as const;
const expected: Record<ProviderLookupMode, boolean[]> = {
  off: [false, false, false, false],
  always: [true, true, true, true],
  uncertain: [false, true, true, true],
};

describe('shouldLookUp', () => {
  test.each(PROVIDER_LOOKUP_MODES.flatMap((mode) => cases.map((c, i) => [mode, c.name, c, expected[mode][i]] as const)))(
    '%s, %s -> %s',
    (mode, _name, c, look) => {
      expect(shouldLookUp(mode, { round: c.round, entityUncertain: c.entityUncertain })).toBe(look);
    },
  );
});

describe('PAYMENT_PROVIDER_LOOKUP setting', () => {
  const base = { IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true' };
  test('default uncertain; each mode accepted; anything else refused naming the setting', () => {
    expect(loadSettings(base).PAYMENT_PROVIDER_LOOKUP).toBe('uncertain');
    for (const mode of PROVIDER_LOOKUP_MODES) expect(loadSettings({ ...base, PAYMENT_PROVIDER_LOOKUP: mode }).PAYMENT_PROVIDER_LOOKUP).toBe(mode);
    expect(() => loadSettings({ ...base, PAYMENT_PROVIDER_LOOKUP: 'sometimes' })).toThrow(/PAYMENT_PROVIDER_LOOKUP/);
  });
});
