/** The simulator's invariants by name, with what each says (a failure prints the name first: invariants.ts, steps.ts judge them). */

/** A broken invariant: its name (what a failure prints first) and what broke it. */
export interface Violation {
  readonly invariant: InvariantName;
  readonly detail: string;
}

export const INVARIANTS = {
  'at-most-one-charge': 'at most one effective charge per payment',
  'no-call-past-key-memory': "no provider call for a key older than the provider's declared memory without a look-up (or an operator's release)",
  'failed-stays-failed': 'a payment whose failure was recorded and alerted is never charged or reopened afterwards unless an operator released it',
  'every-payment-settles': 'every accepted payment ends completed, failed or held, or an alert names it, within the bound',
  'no-delete-while-live': 'no record, run or entity is deleted while another part can still act on it',
  'hub-bounded': "the task hub's instances stay bounded by the live records (final runs past retention without a record are purged)",
  'result-matches-provider': "a provider's final answer (a decline) is recorded as such, not as a failure",
  'runs-finish': "no run is left Running or Pending once the faults stopped and the bound passed (a suspended one is the operator's)",
  'history-bounded': "no run's execution holds more than 150 tasks in its history (the worker replays it whole at each step)",
  'no-false-alarm':
    'no operator is paged for a run that did nothing wrong (one superseded by a duplicate start the task hub dropped; a first attempt held before any of its calls ran)',
  'charged-not-refused': "no record says failed (not held for an operator), rejected or declined while the provider's ledger holds a charge for its key",
  'failure-alerted': 'every payment recorded failed is named by an alert (an error with an alerting outcome and its key) within 24 h',
  'no-takeover-of-suspended': "no record is taken over (its attempt moved on) while its run is suspended (the operator's)",
  'succeeded-is-own-charge': "a record that says succeeded names a charge the provider made under this payment's key, amount and currency",
  'run-writes-its-record': "no run completes under the record's attempt with the record still in progress",
  'ledger-check-reports':
    "every charge the provider made that no record holds (completed succeeded with that charge) is reported by the app's ledger check once its window passed it (or carried undecided, to be reported past its grace)",
  'scenario-premise': 'a directed schedule did what it is there to show (its faults happened, its payment reached the state it needs)',
} as const;
export type InvariantName = keyof typeof INVARIANTS;
