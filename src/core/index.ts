/** The idempotency core, everything in it (the app and its tests use this); users import `./public` (the package export `azure-idempotent-consumer/core`). */
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
export * from './InMemoryIdempotencyStore';
export * from './LeaseHeartbeat';
export * from './invocationKey';
