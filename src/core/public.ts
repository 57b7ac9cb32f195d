/**
 * The public API of the idempotency core: what `azure-idempotent-consumer/core` exports (the
 * `exports` map of package.json). Named exports only; the decision rules, Table row encoding, SDK
 * calls and caches behind the stores are internals and may change without notice.
 *
 * Start with {@link makeIdempotent} and a store: {@link TableIdempotencyStore} or {@link CosmosIdempotencyStore} in Azure,
 * {@link InMemoryIdempotencyStore} in your unit tests.
 */
export { makeIdempotent, getIdempotencyScope } from './makeIdempotent';
export type { MakeIdempotentOptions, IdempotencyScope, Replay, IdempotencyEvent, IdempotencyObserver } from './makeIdempotent';
export { makeIdempotentBatch, BatchIncompleteError, BatchParkReason, PARKED_RESULT } from './makeIdempotentBatch';
export type { MakeIdempotentBatchOptions, BatchEventOutcome, BatchEventInfo } from './makeIdempotentBatch';
export { defaultBatchEventKey, eventGridEventKey, storageQueueMessageKey, timerOccurrenceKey, cosmosChangeKey, blobVersionKey } from './triggerKeys';
export { LeaseHeartbeat } from './LeaseHeartbeat';
export type { HeartbeatTimers } from './LeaseHeartbeat';
export { defaultInvocationKey } from './invocationKey';
export type { InvocationContextLike } from './invocationKey';

export { TableIdempotencyStore } from './TableIdempotencyStore';
export type { TableIdempotencyStoreOptions } from './tableStoreOptions';
export { CosmosIdempotencyStore } from './CosmosIdempotencyStore';
export type { CosmosIdempotencyStoreOptions } from './cosmosStoreOptions';
export type { CosmosRequestCharge } from './CosmosMarkers';
export { InMemoryIdempotencyStore } from './InMemoryIdempotencyStore';
export type { InMemoryIdempotencyStoreOptions } from './InMemoryIdempotencyStore';
export type { IdempotencyStore, Claim, ClaimOptions, ClaimOutcome, ClaimRequest, CommitOutcome, LocalEffect } from './IdempotencyStore';
export { RecordStatus } from './record';
export type { IdempotencyRecord } from './record';

export { keyFromMessageId, keyFromCloudEvent, keyFromBusinessKey, scopedKeyString, MAX_KEY_LENGTH, MAX_CONSUMER_LENGTH } from './keys';
export type { IdempotencyKey } from './keys';
export { payloadDigest } from './digest';
export { systemClock } from './clock';
export type { Clock } from './clock';

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
} from './errors';
