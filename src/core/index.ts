/** The idempotency core: knows nothing of the Functions runtime. */
export * from './errors';
export * from './clock';
export * from './keys';
export * from './digest';
export * from './record';
export * from './tableEncoding';
export * from './IdempotencyStore';
export * from './TableIdempotencyStore';
export * from './CompletedKeyCache';
export * from './makeIdempotent';
export { classifyStoreError, toDomainError } from './storeErrors';
