import { InMemoryIdempotencyStore } from '../../src/core/public';
import { CONTRACT_OPTIONS, describeStoreContract } from '../contract/storeContract';

describeStoreContract('InMemoryIdempotencyStore', async (clock) => new InMemoryIdempotencyStore({ ...CONTRACT_OPTIONS, clock }));
