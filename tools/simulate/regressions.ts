/** Seeds that once broke an invariant, kept so that the defect stays fixed: each runs in CI (test/simulation). */
export interface RegressionSeed {
  readonly seed: number;
  /** Payments per schedule as the failing run had them (undefined: drawn from the seed). */
  readonly payments?: number;
  /** The faults the failing schedule was run with (`all`, or the list `--faults` takes). */
  readonly faults: string;
  /** What it found, and the commit it was found at. */
  readonly found: string;
}

export const REGRESSION_SEEDS: readonly RegressionSeed[] = [
  {
    seed: 1,
    faults: 'table-empty-page',
    found: 'hub-bounded at 4549723: the purge stopped at the first page with no rows and a continuation token (3 final runs kept past retention)',
  },
  {
    seed: 1888,
    faults: 'sb-lock-lost,sb-resend,df-queue-wait,df-activity-crash,df-host-restart,df-timer-late,provider-5xx,provider-outage,provider-5xx-after',
    found:
      'failed-stays-failed at 5541433: a chargeProvider work item sent twice (a host restart between sending and writing history) waited in the queue and charged 2.8 h after the run recorded the payment failed',
  },
  {
    seed: 13,
    payments: 4,
    faults: 'table-forbidden,sb-resend,df-queue-wait,df-terminate,df-suspend,provider-outage',
    found:
      'no-delete-while-live at 206e61e: a run suspended and never resumed kept its record in progress, and the sweep deleted it past retention (a claim would also have taken it for expired)',
  },
];

/**
 * Deliberate mistakes and a seed at which the simulator catches each (test/simulation holds it to that): the same
 * mistakes the demo and the real engine's runs were shown to fail on (docs/durable.md "Deliberate mistakes").
 */
export const MUTATION_SEEDS = [
  { mutation: 'key-per-call', seed: 18, faults: 'provider-lost-answer', breaks: 'at-most-one-charge' },
  { mutation: 'activity-renamed', seed: 1, faults: 'none', breaks: 'no-delete-while-live' },
  { mutation: 'decline-transient', seed: 2, faults: 'none', breaks: 'result-matches-provider' },
] as const;
