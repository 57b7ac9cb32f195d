/**
 * `azure-functions-idempotency/operator`: the operator's console as library functions, and the CLI the package's
 * `bin` runs (`npx azure-functions-idempotency keys ...`). Works on the Table and the Cosmos store: build the records'
 * backend from your client ({@link tableRecords}, {@link cosmosRecords}), then inspect, list, release, evict, replay.
 * The store SDKs, `@azure/identity` and `@azure/service-bus` are optional peers, loaded only when a function needs them.
 *
 * @packageDocumentation
 */
export { inspectRecord } from './inspectRecord';
export type { RecordInspection } from './inspectRecord';
export { listRecords, LIST_BOUNDS } from './listRecords';
export type { ListRecordsOptions, RecordListing } from './listRecords';
export { releaseRecord } from './releaseRecord';
export type { ChangeOptions, ReleaseOutcome } from './releaseRecord';
export { evictRecord } from './evictRecord';
export type { EvictOptions, EvictOutcome } from './evictRecord';
export { replayDeadLetters } from './replay/replayDeadLetters';
export type { ReplayOptions, ReplayReport, ReplayedMessage } from './replay/replayDeadLetters';
export { ReplayAction, replayDecision } from './replay/replayDecision';
export type { ReplayEvidence, ReplayStep } from './replay/replayDecision';
export { REPLAY_CONSUMER } from './replay/replayMarkers';
export type { DeadLetterQueue, DeadLetteredMessage } from './replay/DeadLetterQueue';
export { serviceBusDeadLetterQueue } from './replay/serviceBusDeadLetterQueue';
export type { ServiceBusDeadLetterOptions } from './replay/serviceBusDeadLetterQueue';
export { tableRecords } from './tableRecords';
export type { TableRecordsOptions } from './tableRecords';
export { cosmosRecords } from './cosmosRecords';
export type { CosmosRecordsOptions } from './cosmosRecords';
export type { RecordsBackend, RecordQuery, RecordPage, ConditionalOutcome } from './RecordsBackend';
export { RecordState, recordState, OPERATOR_RELEASE_PREFIX } from './recordState';
export type { ConsumerExtension, ExtensionContext } from './recordState';
export type { RecordView } from './recordView';
export type { OperatorOptions, OperatorAudit } from './operatorOptions';
export type { ScanProgress } from './pagedScan';
export { OperatorRefusal, OperatorRefusedError, OperatorUsageError, OperatorPermissionError, TABLE_ROLES, COSMOS_ROLES } from './operatorErrors';
export type { StoreRoles } from './operatorErrors';
export { connectRecords } from './connect/connectRecords';
export type { StoreConnection, ConnectedRecords } from './connect/connectRecords';
export { runOperatorCli } from './cli/runOperatorCli';
export type { OperatorCliIo } from './cli/cliContext';
export { ExitCode } from './cli/usage';
