import type { Clock } from '../protocol/clock';
import type { IdempotencyStore } from '../protocol/IdempotencyStore';
import type { IdempotencyKey } from '../protocol/keys';
import type { IdempotencyRecord, RecordStatus } from '../protocol/record';
import type { StoreRoles } from './operatorErrors';

/** The server-side part of a listing: one consumer's markers, by status and last write. */
export interface RecordQuery {
  readonly consumer: string;
  /** Only these statuses (undefined: any). */
  readonly statuses?: readonly RecordStatus[];
  /** Only records last written at or before this time (epoch ms). */
  readonly updatedAtOrBeforeMs?: number;
}

/** One answer of the store to a query: its records (maybe none) and where the next page starts (undefined: the end). */
export interface RecordPage {
  readonly records: readonly IdempotencyRecord[];
  readonly cursor: string | undefined;
}

/** What a conditional write found: done, the record moved since it was read (`changed`: the ETag), or gone. */
export type ConditionalOutcome<T> = { readonly kind: 'done'; readonly value: T } | { readonly kind: 'changed' } | { readonly kind: 'gone' };

/**
 * The operator's access to one store's records, beyond the consumer's calls: read any record, page through a
 * consumer's records, and two writes conditional on the ETag read (never an unconditional one). The Table store's
 * is {@link tableRecords}, the Cosmos store's {@link cosmosRecords}. Every failure is a domain error (a 403 an
 * {@link OperatorPermissionError} naming the role).
 */
export interface RecordsBackend {
  /** `table` or `cosmos`, and the roles an identity needs there (named in a 403's message). */
  readonly kind: 'table' | 'cosmos';
  readonly roles: StoreRoles;
  /** The record of `key` (expired ones included), or undefined. @throws InvalidKeyError, store errors */
  read(key: IdempotencyKey): Promise<IdempotencyRecord | undefined>;
  /** The own properties of local row `name` of `key`'s record, or undefined. */
  readLocalRow(key: IdempotencyKey, name: string): Promise<Readonly<Record<string, unknown>> | undefined>;
  /**
   * One request of a listing: the records it answered (none is a valid answer: Azure may answer an empty page with
   * a continuation) and the cursor of the next one. `cursor` undefined starts at the beginning.
   */
  queryPage(query: RecordQuery, cursor: string | undefined, pageSize: number): Promise<RecordPage>;
  /**
   * Sets `record` to `RELEASED` (lease 0, `lastError`, last write `nowMs`; result, rows, generation and retention kept)
   * only if it still has `record.etag`. A lost answer whose write landed is recognised by `lastError` (done).
   */
  releaseIf(record: IdempotencyRecord, lastError: string, nowMs: number): Promise<ConditionalOutcome<IdempotencyRecord>>;
  /** Deletes `record` and its local rows, in one transaction, only if the marker still has `record.etag`. */
  deleteIf(record: IdempotencyRecord): Promise<ConditionalOutcome<{ readonly localRows: number }>>;
  /**
   * An idempotency store on the same table or container, for the operator's own keys (the dead-letter replay's
   * progress markers, under their own consumer name): claims and completions with the store's rules.
   */
  markerStore(options: { readonly retentionMs: number; readonly leaseMs: number; readonly clock?: Clock }): IdempotencyStore;
}
