import type { IdempotencyKey } from './keys';
import type { IdempotencyRecord, RecordStatus } from './record';

/** Proof of holding a key's lease; pass it back to complete, release or renew. */
export interface Claim {
  readonly key: IdempotencyKey;
  /**
   * The record's id in its store: opaque (compare it, hash it, never parse it), the same for every
   * claim of the key while the store's layout stays (the Table store uses the marker's RowKey).
   * With the generation and the digest it names work started for this claim (e.g. the charge entity).
   */
  readonly recordId: string;
  readonly digest: string;
  /** Fencing number of this claim: pass it downstream so stale attempts can be refused. */
  readonly attempt: number;
  readonly ownerId: string;
  readonly leaseExpiresAtMs: number;
  /** The record's generation (see {@link IdempotencyRecord.createdAtMs}): identifies work started for this lifetime. */
  readonly createdAtMs: number;
  /** Names of the local rows on record for this claim (written by it, or by its completion). */
  readonly localRows: readonly string[];
  /** Version of the record this claim wrote; every later write is conditional on it. */
  readonly etag: string;
}

/**
 * A local side effect written atomically with the record (the Table store: a row beside the
 * marker, in the same partition and transaction). Its lifecycle is the record's: the record lists
 * its rows' names; a takeover deletes the previous attempt's rows it does not write again; the
 * expiry sweep deletes them with the record; a fresh claim overwrites a leftover row of the same
 * name. A key has at most 99 local rows.
 */
export interface LocalEffect {
  /** Distinguishes this effect's row from the marker's; `[A-Za-z0-9_-]{1,64}`. */
  readonly name: string;
  /** Properties of the row (string, number, boolean or null values). */
  readonly properties: Readonly<Record<string, string | number | boolean | null>>;
}

/** What a claim found and did. Exactly one claimant of a key ever sees `claimed`/`reclaimed` at a time. */
export type ClaimOutcome =
  /** The key was absent (or expired): this caller holds attempt 1 (or the next attempt). */
  | { readonly kind: 'claimed'; readonly claim: Claim }
  /** A lapsed or released claim was taken over; this caller holds `claim.attempt`. */
  | { readonly kind: 'reclaimed'; readonly claim: Claim; readonly previousStatus: RecordStatus; readonly previousAttempt: number }
  /** Completed before with the same digest: the stored result is returned. */
  | { readonly kind: 'duplicate'; readonly record: IdempotencyRecord; readonly cached: boolean }
  /** Another claimant holds a valid lease. */
  | { readonly kind: 'inProgress'; readonly record: IdempotencyRecord }
  /** The key is on record for a payload with another digest. */
  | { readonly kind: 'keyReused'; readonly record: IdempotencyRecord; readonly digest: string; readonly cached: boolean };

/** Outcome of {@link IdempotencyStore.commit}: the one-transaction path. */
export type CommitOutcome =
  | { readonly kind: 'committed'; readonly record: IdempotencyRecord; readonly takeover: boolean }
  | Extract<ClaimOutcome, { kind: 'duplicate' | 'inProgress' | 'keyReused' }>;

export interface ClaimOptions {
  /** Local effects written atomically with the marker. */
  readonly effects?: readonly LocalEffect[];
  /** Lease length for this claim instead of the store's default. */
  readonly leaseMs?: number;
  /**
   * Read the record before writing: set it for a redelivery (Service Bus `deliveryCount` > 1), where a
   * record most likely exists. A completed duplicate then costs one round trip instead of two; a key
   * found absent still costs the insert. Same outcomes either way; stores without the distinction ignore it.
   */
  readonly readFirst?: boolean;
  /**
   * Answer `inProgress` for an in-progress record whose lease has lapsed, instead of taking it over: the
   * caller first learns whether the work goes on elsewhere (payments: its orchestration durably started),
   * then claims again without this option to take the record over. Released and expired records are taken
   * over as usual.
   */
  readonly keepLapsedInProgress?: boolean;
}

/** Options of {@link IdempotencyStore.complete}. */
export interface CompleteOptions {
  /**
   * Complete only the version of the record the claim names (`claim.etag`): a write of the same claim since (a lease
   * renewal, e.g. one that announces a side effect before it is made) refuses the completion as a takeover does
   * (`LeaseLostError`), so a completion decided on what was read cannot land over a change it did not see. Its own
   * write landed with the answer lost still resolves as done. Default: a renewal since is written through.
   */
  readonly exact?: boolean;
}

/** One key of a {@link IdempotencyStore.claimMany} batch. */
export interface ClaimRequest {
  readonly key: IdempotencyKey;
  readonly digest: string;
}

/**
 * The dedup store. Only the store arbitrates races: the claim is insert-if-absent, every later
 * write is conditional on the claim's version. Failures are domain errors (see `errors.ts`).
 */
export interface IdempotencyStore {
  /** Default lease of a claim, in ms (the wrapper's heartbeat renews every third of it). */
  readonly leaseMs?: number;
  /** Claims `key` for a payload with `digest`. @throws StoreUnavailableError, StoreRequestError */
  claim(key: IdempotencyKey, digest: string, options?: ClaimOptions): Promise<ClaimOutcome>;
  /**
   * Claims many keys at once (a batch of events): the outcomes, in the order of `requests`, are those
   * `claim` would give each key; a store that can, decides them in fewer round trips than one claim per
   * key (the Table store: one transaction per partition). Each key at most once per call (else
   * `ConfigurationError`). Optional: without it, callers claim one by one.
   */
  claimMany?(requests: readonly ClaimRequest[], options?: Pick<ClaimOptions, 'leaseMs'>): Promise<ClaimOutcome[]>;
  /**
   * Records the key as completed with `result` and its local effects in one transaction, with
   * no in-progress phase: for work whose every effect is local. One round trip when fresh.
   */
  commit(key: IdempotencyKey, digest: string, result: unknown, effects?: readonly LocalEffect[]): Promise<CommitOutcome>;
  /**
   * Completes a claim. A claim whose lease was renewed since (its ETag moved, same owner and attempt)
   * still completes: only a takeover makes it lost (unless `options.exact`). @throws LeaseLostError when the claim was
   * taken over (or, `exact`, its record changed since `claim.etag`); ResultTooLargeError
   */
  complete(claim: Claim, result: unknown, effects?: readonly LocalEffect[], options?: CompleteOptions): Promise<IdempotencyRecord>;
  /** Gives a claim up so the next delivery can take it at once. @throws LeaseLostError */
  release(claim: Claim, reason: string): Promise<void>;
  /** Extends a claim's lease. @throws LeaseLostError */
  renewLease(claim: Claim, leaseMs?: number): Promise<Claim>;
  /** Reads the record of `key`, if any (expired records included). */
  get(key: IdempotencyKey): Promise<IdempotencyRecord | undefined>;
}

/** Outcome of {@link ReopenableStore.reopen}. */
export type ReopenOutcome =
  /** The record is `RELEASED` now (its result and generation kept): the next claim takes it over, attempt + 1. */
  | { readonly kind: 'reopened'; readonly record: IdempotencyRecord }
  /** The record is no longer the one read (its ETag moved: taken over, rewritten, removed): nothing was written. */
  | { readonly kind: 'changed' };

/**
 * A store an operator's tool can work on beyond the consumer's calls (the payments retry, `src/app/paymentRetry.ts`):
 * both the Table and the Cosmos store are one.
 */
export interface ReopenableStore extends IdempotencyStore {
  /**
   * Reopens a completed record for a new claim: `COMPLETED` -> `RELEASED`, lease 0, `reason` as its `lastError`,
   * its result, rows and generation kept, conditional on `record.etag` (`If-Match`; a 412 is `changed`). The
   * next {@link claim} takes it over (attempt + 1, the same generation). A record already reopened from the same
   * completion (this write landed and its answer was lost, or another operator's reopen) answers `reopened` as it
   * is, with nothing written: the claim that follows decides between the operators. Never done by a consumer: a completed
   * record is final to it. @throws ConfigurationError when `record` is not completed; StoreUnavailableError, StoreRequestError
   */
  reopen(record: IdempotencyRecord, reason: string): Promise<ReopenOutcome>;
  /** The own properties of local row `name` of `key`'s record, or undefined when absent. @throws StoreUnavailableError, StoreRequestError */
  readLocalRow(key: IdempotencyKey, name: string): Promise<Readonly<Record<string, unknown>> | undefined>;
}
