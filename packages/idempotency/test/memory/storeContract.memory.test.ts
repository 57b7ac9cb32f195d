import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { CONTRACT_OPTIONS, describeStoreContract } from '../contract/storeContract';

describeStoreContract('InMemoryIdempotencyStore', async (clock) => {
  const store = new InMemoryIdempotencyStore({ ...CONTRACT_OPTIONS, clock });
  return { store, localRowsOf: async (key) => new Map([...store.localRowsOf(key)].map(([name, properties]) => [name, { ...properties }])) };
});
