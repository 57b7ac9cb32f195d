import type { IdempotencyKey } from 'azure-functions-idempotency';
import { CosmosIdempotencyStore } from 'azure-functions-idempotency/cosmos';
import { CONTRACT_OPTIONS, describeStoreContract, type StoreUnderTest } from '../contract/storeContract';
import { CosmosEmulator } from '../../../../test/support/cosmos';
import { localRowsInContainer } from '../../../../test/support/cosmosRows';
import type { FakeClock } from '../../../../test/support/tables';

// The contract on the in-process Cosmos emulator (@vercel/cosmosdb-server). What it cannot show, and so
// what this suite cannot prove of the real service: that a transactional batch is atomic (the emulator
// applies the ops before a failing one), that `ttl` deletes documents (not enforced), request charges
// (a flat 1 per request). Every assertion of the suite is about outcomes these gaps do not touch.
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

async function cosmosStore(clock: FakeClock, cacheSize: number): Promise<StoreUnderTest> {
  const container = await cosmos.freshIdempotencyContainer();
  const store = new CosmosIdempotencyStore(container, { ...CONTRACT_OPTIONS, clock, cacheSize });
  return { store, localRowsOf: (key: IdempotencyKey) => localRowsInContainer(container, store.recordIdOf(key)) };
}

describeStoreContract('CosmosIdempotencyStore on the Cosmos emulator', (clock) => cosmosStore(clock, 0));
describeStoreContract('CosmosIdempotencyStore on the Cosmos emulator, completed-key cache on', (clock) => cosmosStore(clock, 1_000));
