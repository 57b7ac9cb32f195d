import { tickShares } from '../../src/lifecycle/tickBudget';

describe('tickShares: whole milliseconds', () => {
  test('an odd budget: the sweep gets the half rounded down, the reconciler at least the quarter rounded down', () => {
    const shares = tickShares(1_003);
    expect(shares.sweepMs).toBe(501);
    expect(shares.reconcileMs(0)).toBe(250);
    expect(shares.reconcileMs(250.5)).toBe(250.5);
    expect(shares.reconcileMs(251)).toBe(251);
  });
});
