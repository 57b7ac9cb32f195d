/**
 * The public API of `azure-functions-idempotency` (the package's `.` export): the wrappers, keys, errors and
 * the store contract, and the helpers a consumer's own storage calls share with the stores (deadline, conflicts).
 * The stores are subpaths, so a Table user never loads Cosmos code:
 * `azure-functions-idempotency/table`, `/cosmos`, `/memory`. Named exports only; the decision rules, row
 * encodings, SDK calls and caches behind the stores are internals and may change without notice.
 *
 * @packageDocumentation
 */
export { makeIdempotent, getIdempotencyScope } from './wrappers/makeIdempotent';
export type { MakeIdempotentOptions, IdempotencyScope, Replay, IdempotencyEvent, IdempotencyObserver } from './wrappers/makeIdempotent';
export { makeIdempotentBatch, BatchIncompleteError, BatchParkReason, PARKED_RESULT } from './wrappers/makeIdempotentBatch';
export type { MakeIdempotentBatchOptions, BatchEventOutcome, BatchEventInfo, ParkFailedResult } from './wrappers/makeIdempotentBatch';
export {
  defaultBatchEventKey,
  eventGridEventKey,
  storageQueueMessageKey,
  timerOccurrenceKey,
  cosmosChangeKey,
  blobVersionKey,
  blobDownloadKey,
} from './wrappers/triggerKeys';
export type { BlobDownloadLike } from './wrappers/triggerKeys';
export { LeaseHeartbeat } from './wrappers/LeaseHeartbeat';
export type { HeartbeatTimers } from './wrappers/LeaseHeartbeat';
export { defaultInvocationKey } from './wrappers/invocationKey';
export type { InvocationContextLike } from './wrappers/invocationKey';
export { assertMetadataNotFromBody } from './wrappers/hostMetadata';

export type {
  IdempotencyStore,
  Claim,
  ClaimOptions,
  CompleteOptions,
  ClaimOutcome,
  ClaimRequest,
  CommitOutcome,
  LocalEffect,
  ReopenableStore,
  ReopenOutcome,
} from './protocol/IdempotencyStore';
export { RecordStatus } from './protocol/record';
export type { IdempotencyRecord } from './protocol/record';

export { keyFromMessageId, keyFromCloudEvent, keyFromBusinessKey, scopedKeyString, MAX_KEY_LENGTH, MAX_CONSUMER_LENGTH } from './protocol/keys';
export type { IdempotencyKey } from './protocol/keys';
export { payloadDigest } from './wrappers/digest';
export { systemClock } from './protocol/clock';
export type { Clock } from './protocol/clock';
export type { CommonStoreOptions } from './protocol/storeOptions';
export { withDeadline, DEFAULT_STORE_TIMEOUT_MS } from './protocol/deadline';
export type { StoreCallKind } from './protocol/deadline';
export { conflictOfStatus } from './protocol/storeConflict';
export type { StoreConflict } from './protocol/storeConflict';

export {
  IdempotencyError,
  InvalidKeyError,
  InvalidPayloadError,
  ResultTooLargeError,
  ConfigurationError,
  StoreUnavailableError,
  StoreRequestError,
  LeaseLostError,
  UnknownRecordStatusError,
  KeyInProgressError,
  KeyReusedError,
} from './protocol/errors';
