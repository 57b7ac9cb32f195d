/** `azure-functions-idempotency/memory`: the in-process store for unit tests (no SDK; one process only). */
export { InMemoryIdempotencyStore } from './InMemoryIdempotencyStore';
export type { InMemoryIdempotencyStoreOptions } from './InMemoryIdempotencyStore';
