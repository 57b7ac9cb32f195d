/**
 * `azure-functions-idempotency/internal`: everything in the package, for this repository's app, tools and
 * tests (they use the row encodings, rules and SDK error mapping). Not covered by semver: users import
 * `azure-functions-idempotency` and its store subpaths (`/table`, `/cosmos`, `/memory`).
 */
export * from './protocol/errors';
export * from './protocol/clock';
export * from './protocol/keys';
export * from './wrappers/digest';
export * from './protocol/record';
export * from './protocol/recordRules';
export * from './protocol/recordId';
export * from './stores/table/partitions';
export * from './stores/table/tableRows';
export * from './protocol/localRows';
export * from './protocol/IdempotencyStore';
export * from './stores/table/TableIdempotencyStore';
export * from './protocol/storeOptions';
export * from './stores/table/tableStoreOptions';
export * from './stores/table/sweep/ExpirySweeper';
export * from './stores/table/sweep/heldRecords';
export * from './stores/table/sweep/sweepCheckpoint';
export * from './stores/table/sweep/sweepQuery';
export * from './stores/table/sweep/sweepDelete';
export * from './stores/table/sweep/conditionalBatchDelete';
export * from './protocol/CompletedKeyCache';
export * from './wrappers/makeIdempotent';
export { classifyStoreError, toDomainError } from './stores/table/storeErrors';
export * from './protocol/storeConflict';
export * from './stores/memory/InMemoryIdempotencyStore';
export * from './wrappers/LeaseHeartbeat';
export * from './wrappers/invocationKey';
export * from './wrappers/makeIdempotentBatch';
export * from './wrappers/triggerKeys';
export * from './stores/cosmos/CosmosIdempotencyStore';
export * from './stores/cosmos/cosmosStoreOptions';
export * from './stores/cosmos/cosmosDocuments';
export type { CosmosRequestCharge, CosmosWriteResult } from './stores/cosmos/CosmosMarkers';
export { CosmosMarkers } from './stores/cosmos/CosmosMarkers';
export { classifyCosmosStoreError, cosmosStoreError } from './stores/cosmos/cosmosStoreErrors';
export { DEFAULT_STORE_TIMEOUT_MS, withDeadline } from './protocol/deadline';
export type { StoreCallKind } from './protocol/deadline';
export { assertMetadataNotFromBody } from './wrappers/hostMetadata';
export { integerOption, MAX_STORE_TIMEOUT_MS } from './protocol/options';
// The operator's console: its pure parts (scan, plans, the CLI's durations), for this repository's tests.
export { scanPages } from './operator/pagedScan';
export type { ScanPage, ScanResult } from './operator/pagedScan';
export { releasePlan, evictPlan, releaseNote, isReleaseOf } from './operator/releaseRules';
export type { OperatorPlan } from './operator/releaseRules';
export { duration as parseDuration } from './operator/cli/cliArgs';
export { copyOf as serviceBusCopyOf } from './operator/replay/serviceBusDeadLetterQueue';
