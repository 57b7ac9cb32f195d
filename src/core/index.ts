/** The idempotency core: knows nothing of the Functions runtime. */
export * from './errors';
export * from './clock';
export * from './keys';
export * from './digest';
export * from './record';
export * from './recordRules';
export * from './tableEncoding';
export * from './tableRows';
export * from './IdempotencyStore';
export * from './TableIdempotencyStore';
export * from './tableStoreOptions';
export * from './CompletedKeyCache';
export * from './makeIdempotent';
export { classifyStoreError, toDomainError } from './storeErrors';
export * from './storeConflict';
