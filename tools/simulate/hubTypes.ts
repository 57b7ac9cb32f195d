import type * as df from 'durable-functions';
import type { ChargeEntityOperation } from '../../src/payments/chargeEntity';

/** The simulated task hub's shapes: runs, their history, their steps, its faults (hub.ts runs them). */

/** A run's status as the task hub keeps it (the extension's `runtimeStatus`). */
export type HubStatus = 'Pending' | 'Running' | 'Completed' | 'Failed' | 'Terminated' | 'Suspended';

/** One step a run yields (what `context.df.*` returns in the fake context). */
export type HubTask =
  /** `sentAtMs`: the sending episode's `currentUtcDateTime` (the request's timestamp: what the entity de-duplicates by). */
  | { readonly kind: 'entity'; readonly entityKey: string; readonly operation: ChargeEntityOperation; readonly sentAtMs: number }
  | { readonly kind: 'activity'; readonly name: string; readonly input: unknown }
  | { readonly kind: 'timer'; readonly atMs: number };

/** A task's outcome in a run's history, with the time of the episode that took it in (`currentUtcDateTime` after it). */
export interface HistoryResult {
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: string;
  readonly episodeMs: number;
}

export interface Instance {
  readonly id: string;
  status: HubStatus;
  input: unknown;
  createdMs: number;
  /** Each start is a new execution: messages of an earlier one are dropped. */
  execution: number;
  /** The first episode's time (ExecutionStarted): `currentUtcDateTime` until the first task completes. */
  startedMs?: number;
  results: HistoryResult[];
  /**
   * Results written to history (the episodes that took them in committed). The ones after were taken in by an episode
   * that died before its history: the episode that runs again takes them in at its own, new time.
   */
  committed: number;
  /** Per entity call (task index): the id of the request sent last; only its answer completes the task. */
  awaiting: Map<number, string>;
  /** Tasks scheduled and signals sent, as written to history (a replay does not send them again). */
  scheduled: number;
  signals: number;
  output?: unknown;
  /** Episodes held while suspended. */
  held: Array<() => void>;
}

/** The task hub's faults (rates per message or per episode). */
export interface HubFaults {
  queueWait: number;
  activityCrash: number;
  hostRestart: number;
  duplicateStart: number;
  timerLate: number;
  /**
   * An activity work item runs again after its answer was delivered: the provider sends the answer, then deletes the
   * item; a failed delete abandons it (visible again after a 2^n s backoff) and a worker that dies between the two
   * leaves it to the visibility timeout.
   */
  redeliverAnswered: number;
}

/** The extension's queue visibility timeout (host.json): a message a dead worker took reappears after it. */
export const VISIBILITY_MS = 60_000;

/** What runs the app's code for the hub: the orchestrator and activities by name (the registrations). */
export interface HubFunctions {
  readonly orchestrator: (context: df.OrchestrationContext) => Generator<unknown, unknown, unknown>;
  /** Each activity's body; `work.ageMs`: how long since the run sent this work item (its queue wait, re-runs included). */
  readonly activities: ReadonlyMap<string, (input: unknown, work: { readonly ageMs: number }) => Promise<unknown>>;
}

/** A new execution's history: nothing answered, scheduled, sent or awaited. */
export function emptyHistory(): Pick<Instance, 'results' | 'committed' | 'awaiting' | 'scheduled' | 'signals'> {
  return { results: [], committed: 0, awaiting: new Map(), scheduled: 0, signals: 0 };
}

/** An instance id short enough for a trace line. */
export function short(instanceId: string): string {
  return instanceId.length > 20 ? `${instanceId.slice(0, 16)}..` : instanceId;
}
