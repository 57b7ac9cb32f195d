import type { IdempotencyKey } from '../protocol/keys';
import { RecordStatus, type IdempotencyRecord } from '../protocol/record';
import { hasValidLease, isExpired } from '../protocol/recordRules';

/**
 * How an operator reads a record: one state per record, from its status, lease and retention at a time, refined by
 * the consumer's {@link ConsumerExtension} (the core knows no result shape).
 *
 * ```
 *  IN_PROGRESS, lease live ............ inProgress   (someone works on it: never released, evicted only forced)
 *  IN_PROGRESS, lease lapsed .......... lapsed       (the next delivery takes it over)
 *  COMPLETED .......................... completed    (or failed / held, when the consumer's extension says so)
 *  RELEASED by a failing attempt ...... failed       (lastError: why; the next delivery takes it over)
 *  RELEASED by an operator ............ released
 *  past retention, no live lease ...... expired      (counts as absent: the next claim starts a new lifetime)
 * ```
 */
export const RecordState = {
  InProgress: 'in-progress',
  Lapsed: 'lapsed',
  Completed: 'completed',
  Released: 'released',
  Failed: 'failed',
  Held: 'held',
  Expired: 'expired',
  /** A status this version does not know (a newer version's, or edited by hand): never released. */
  Unknown: 'unknown',
} as const;
export type RecordState = (typeof RecordState)[keyof typeof RecordState];

/** Every state, in the order the usage lists them. */
export const RECORD_STATES: readonly RecordState[] = Object.values(RecordState);

/** What `lastError` of a record an operator released starts with (the rest: who, when and why). */
export const OPERATOR_RELEASE_PREFIX = 'released by operator ';

/** What a consumer's own code reads from its side of a record (its rows), for an operator's extension. */
export interface ExtensionContext {
  /** The key of the record. */
  readonly key: IdempotencyKey;
  /** The own properties of local row `name` of the record, or undefined when absent. Print none of them that is payload. */
  readonly readLocalRow: (name: string) => Promise<Readonly<Record<string, unknown>> | undefined>;
}

/**
 * What an app adds to the operator's console for one consumer (the core knows nothing of payments): how to read
 * its results, what to show beside a record, and whether work on it still goes on outside the store.
 * Nothing an extension returns may be payload: the console prints it as it is.
 *
 * @example
 * ```ts
 * const payments: ConsumerExtension = {
 *   consumer: 'payments',
 *   classify: (record) => ((record.result as { status?: string })?.status === 'failed' ? 'failed' : undefined),
 *   describe: async (record, { readLocalRow }) => ({ 'payment row': String((await readLocalRow('payment'))?.status ?? 'none') }),
 *   activeWork: async (record) => ((await runStatus(record)) === 'Running' ? 'its charge run is Running' : undefined),
 * };
 * ```
 */
export interface ConsumerExtension {
  /** The consumer name it applies to, exactly as the consumer claims with. */
  readonly consumer: string;
  /**
   * The consumer's reading of a record that is not in progress: `failed` or `held` (e.g. payments: completed with a
   * failed charge, or held for an operator), else undefined (the core's reading stands). Pure; must not throw.
   */
  classify?(record: IdempotencyRecord): 'failed' | 'held' | undefined;
  /** Facts shown beside the record (label -> text): the run's status, a row's status. Never payload. */
  describe?(record: IdempotencyRecord, context: ExtensionContext): Promise<Readonly<Record<string, string>>>;
  /**
   * Work on this record still going outside the store (a Durable run, a job): what it is, or undefined. A release is
   * refused while there is some, and an eviction unless forced.
   */
  activeWork?(record: IdempotencyRecord, context: ExtensionContext): Promise<string | undefined>;
}

/** The extension of `consumer` among `extensions`, if any. */
export function extensionFor(extensions: readonly ConsumerExtension[] | undefined, consumer: string): ConsumerExtension | undefined {
  return extensions?.find((extension) => extension.consumer === consumer);
}

/** The state of `record` at `nowMs` (see {@link RecordState}); `extension` may read a settled record as failed or held. */
export function recordState(record: IdempotencyRecord, nowMs: number, extension?: ConsumerExtension): RecordState {
  if (hasValidLease(record, nowMs)) return RecordState.InProgress;
  if (isExpired(record, nowMs)) return RecordState.Expired;
  if (record.status === RecordStatus.InProgress) return RecordState.Lapsed;
  if (record.status !== RecordStatus.Completed && record.status !== RecordStatus.Released) return RecordState.Unknown;
  let reading: 'failed' | 'held' | undefined;
  try {
    reading = extension?.classify?.(record);
  } catch {
    reading = undefined; // an extension that throws reads nothing: the core's reading stands
  }
  if (reading === 'failed') return RecordState.Failed;
  if (reading === 'held') return RecordState.Held;
  if (record.status === RecordStatus.Completed) return RecordState.Completed;
  return record.lastError?.startsWith(OPERATOR_RELEASE_PREFIX) ? RecordState.Released : RecordState.Failed;
}

/**
 * The store statuses a state can have, for a query's server-side filter (the exact state is decided on each record
 * read, {@link recordState}): failed and held can be completed or released records.
 */
export function statusesOf(states: readonly RecordState[]): RecordStatus[] | undefined {
  const statuses = new Set<RecordStatus>();
  for (const state of states) {
    if (state === RecordState.Expired || state === RecordState.Unknown) return undefined; // any status
    if (state === RecordState.InProgress || state === RecordState.Lapsed) statuses.add(RecordStatus.InProgress);
    if (state === RecordState.Completed || state === RecordState.Failed || state === RecordState.Held) statuses.add(RecordStatus.Completed);
    if (state === RecordState.Released || state === RecordState.Failed || state === RecordState.Held) statuses.add(RecordStatus.Released);
  }
  return [...statuses];
}
