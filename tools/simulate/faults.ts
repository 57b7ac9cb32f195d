/**
 * The faults the simulator injects, each one Azure (or the provider) documents: docs/simulation.md has the catalogue
 * with the sources. A schedule draws, per fault it may inject, a rate from its levels (0 included, so some schedules
 * have few faults); `--faults` narrows the set.
 */
export const FAULTS = {
  /** Table Storage: a request times out or answers 500/503 before it lands (the store says StoreUnavailableError). */
  'table-unavailable': [0, 0.01, 0.05],
  /** Table Storage: the write lands and its answer is lost (a timeout or a reset after the service applied it). */
  'table-lost-answer': [0, 0.01, 0.03],
  /**
   * Table Storage: a query page ends early (Azure stops a page at 1,000 rows scanned, 5 s, or a partition boundary) and
   * may come back with no rows and a continuation token. Scaled to the simulation's small tables: a page scans at most
   * a few rows. How Azure answers at scale, not a passing fault: it lasts the whole schedule.
   */
  'table-empty-page': [0, 1],
  /** Table Storage: 403 or 404 for a while (a role change propagating, a table deleted and created again). */
  'table-forbidden': [0, 1],
  /** Service Bus: a delivery's lock is lost (renewal failed or outlasted): the message is delivered again meanwhile. */
  'sb-lock-lost': [0, 0.05, 0.2],
  /**
   * Functions + Service Bus: the host running a delivery dies mid-invocation (scale-in, restart, out of memory): its
   * code stops, its lock is not renewed, the message comes back after the lock expires.
   */
  'sb-host-crash': [0, 0.1, 0.3],
  /** Service Bus: the producer sends the message again (inside or outside the duplicate detection window). */
  'sb-resend': [0, 0.2, 0.5],
  /** Service Bus: an operator resubmits a dead-lettered message (hours later). */
  'sb-resubmit': [0, 1],
  /** Durable: a queue message (control or work item) waits minutes to hours before a worker takes it. */
  'df-queue-wait': [0, 0.05, 0.2],
  /** Durable: the worker dies while an activity runs (after its provider call, or before): the activity runs again. */
  'df-activity-crash': [0, 0.05, 0.2],
  /** Durable: the host restarts after an episode sent its messages and before its history was written. */
  'df-host-restart': [0, 0.05, 0.15],
  /**
   * Durable: an activity work item runs again after its answer was delivered (the Azure Storage provider sends the
   * answer, then deletes the item: a failed delete abandons it, visible again after a 2^n s backoff; a worker that dies
   * between the two leaves it to the visibility timeout).
   */
  'df-work-item-again': [0, 0.05, 0.2],
  /**
   * Durable: a call of the Durable client (start, status, query, purge: the extension's HTTP API over the task hub's
   * storage) takes seconds to minutes; durable-functions sets no timeout on them.
   */
  'df-client-slow': [0, 0.05, 0.2],
  /** Durable: two starts of one instance id race; the provider keeps the first's input (check-then-act). */
  'df-duplicate-start': [0, 1],
  /** Durable: an operator terminates a run (a message on its control queue, applied by its next episode). */
  'df-terminate': [0, 0.1, 0.3],
  /** Durable: an operator suspends a run (and resumes it later, or never). */
  'df-suspend': [0, 0.1],
  /** Durable: a durable timer fires late (the control queue's backlog, a scaled-in app). */
  'df-timer-late': [0, 0.1, 0.4],
  /** Provider: the charge is made and its answer is lost (timeout, reset). */
  'provider-lost-answer': [0, 0.05, 0.2],
  /** Provider: 5xx before the charge (nothing charged). */
  'provider-5xx': [0, 0.05, 0.2],
  /** Provider: an outage (5xx for every call) of minutes to hours. */
  'provider-outage': [0, 1],
  /** Provider: 500 after the charge was made; saved as the key's response and replayed to every later call with the key (Stripe). */
  'provider-5xx-after': [0, 0.05, 0.1],
  /** Provider: a look-up does not see a charge made less than its lag ago (a search index). */
  'provider-lookup-lag': [0, 1],
  /** Functions: the expiry timer fires late or skips a run (scale to zero, a host restart: `isPastDue`). */
  'timer-late': [0, 0.2, 0.5],
} as const;

export type FaultName = keyof typeof FAULTS;
export const FAULT_NAMES = Object.keys(FAULTS) as FaultName[];

/** A schedule's fault rates: 0 for a fault it does not inject. */
export type FaultRates = Record<FaultName, number>;

/** Parses `--faults a,b` (or `all`); throws on a name not in the catalogue. */
export function parseFaults(list: string | undefined): readonly FaultName[] {
  if (list === undefined || list === 'all') return FAULT_NAMES;
  if (list === 'none' || list === '') return [];
  const names = list.split(',').map((name) => name.trim());
  for (const name of names) if (!(name in FAULTS)) throw new Error(`unknown fault ${name}: one of ${FAULT_NAMES.join(', ')}`);
  return names as FaultName[];
}

/**
 * Deliberate mistakes the simulator must catch (the same ones the demo and CI inject on the real engine): the
 * activity mints a new Idempotency-Key per call; the run calls an activity name nobody registered; declines are
 * retried as transient failures; a 409 (the key in flight) read as a rejection; the trigger blind to a run still going
 * (a redelivery takes its record over); a ledger check that takes a record settled otherwise for matched; the engine's
 * copy of a first round called as a first call (its repeat plan dropped). `--mutate` applies one; the simulator has to fail
 * with a named invariant.
 */
export const MUTATIONS = [
  'key-per-call',
  'activity-renamed',
  'decline-transient',
  'conflict-rejected',
  'takeover-live',
  'ledger-silent',
  'copy-not-repeat',
] as const;
export type Mutation = (typeof MUTATIONS)[number];
