import { RECONCILE_MIN_SHARE, SWEEP_SHARE, tickShares } from '../../src/lifecycle/tickBudget';

test('the sweep gets at most half of the tick, the reconciler at least a quarter whatever the sweep used (issue 43: no starving)', () => {
  const shares = tickShares(240_000);
  expect(shares.sweepMs).toBe(240_000 * SWEEP_SHARE);
  expect(shares.reconcileMs(0)).toBe(240_000 * RECONCILE_MIN_SHARE); // the sweep spent everything: still 60 s
  expect(shares.reconcileMs(150_000)).toBe(150_000); // what is left when it is more
});

describe('tickShares: whole milliseconds', () => {
  test('an odd budget: the sweep gets the half rounded down, the reconciler at least the quarter rounded down', () => {
    const shares = tickShares(1_003);
    expect(shares.sweepMs).toBe(501);
    expect(shares.reconcileMs(0)).toBe(250);
    expect(shares.reconcileMs(250.5)).toBe(250.5);
    expect(shares.reconcileMs(251)).toBe(251);
  });
});
