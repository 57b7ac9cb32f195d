import type { IdempotencyKey } from '../protocol/keys';
import { IdempotencyError } from '../protocol/errors';

/** Why an event of a batch was parked instead of processed. */
export const BatchParkReason = {
  /** Its key could not be derived (e.g. an incomplete CloudEvent). */
  InvalidKey: 'invalid-key',
  /** Its key is on record for another payload (a producer reused an id). */
  KeyReused: 'key-reused',
  /** The handler failed `maxAttempts` times in a row. */
  RetriesExhausted: 'retries-exhausted',
  /** The handler's result cannot be stored (too large, or JSON would change it). */
  ResultNotStorable: 'result-not-storable',
  /** Its payload has no digest (e.g. nested deeper than `MAX_PAYLOAD_DEPTH`): parked, never run, never thrown. */
  InvalidPayload: 'invalid-payload',
} as const;
export type BatchParkReason = (typeof BatchParkReason)[keyof typeof BatchParkReason];

/** What the result of a parked event is stored as, so a replay skips it (the parking store holds the event). */
export const PARKED_RESULT = { parked: true } as const;

/** One event's fate in a batch. */
export type BatchEventOutcome<R> =
  | { readonly kind: 'completed'; readonly index: number; readonly key: IdempotencyKey; readonly attempt: number; readonly result: R }
  | { readonly kind: 'duplicate'; readonly index: number; readonly key: IdempotencyKey; readonly result: unknown }
  | { readonly kind: 'parked'; readonly index: number; readonly key?: IdempotencyKey; readonly reason: BatchParkReason; readonly detail: string };

/** Where the handler's event stands: its place in the batch, its key and its claim's attempt. */
export interface BatchEventInfo {
  readonly index: number;
  readonly key: IdempotencyKey;
  readonly attempt: number;
}

/** An event another invocation holds did not finish within the wait budget: the batch must be retried. */
export class BatchIncompleteError extends IdempotencyError {
  constructor(
    readonly index: number,
    readonly scopedKey: string,
  ) {
    super(`event ${index} (${JSON.stringify(scopedKey)}) is in progress elsewhere past the wait budget; the batch must be retried`, { retryable: true });
  }
}
