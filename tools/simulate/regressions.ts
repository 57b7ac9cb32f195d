/** Seeds that once broke an invariant, kept so that the defect stays fixed: each runs in CI (test/simulation). */
export interface RegressionSeed {
  readonly seed: number;
  readonly payments: number;
  /** The faults the failing schedule was run with (`all`, or the list `--faults` takes). */
  readonly faults: string;
  /** What it found, and the commit it was found at. */
  readonly found: string;
}

export const REGRESSION_SEEDS: readonly RegressionSeed[] = [];
