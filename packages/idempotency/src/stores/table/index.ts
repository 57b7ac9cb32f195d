/** `azure-functions-idempotency/table`: the Azure Table Storage store (peer dependency `@azure/data-tables`). */
export { TableIdempotencyStore } from './TableIdempotencyStore';
export type { TableIdempotencyStoreOptions } from './tableStoreOptions';
export type { TableAddress } from './partitions';
export { classifyStoreError, toDomainError } from './storeErrors';
export { ExpirySweeper } from './sweep/ExpirySweeper';
export type { ExpirySweeperOptions, SweepReport } from './sweep/ExpirySweeper';
export type { SweepPosition } from './sweep/sweepCheckpoint';
export type { HeldKeysSource } from './sweep/heldRecords';
