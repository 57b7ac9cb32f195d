import type { TableClient } from '@azure/data-tables';
import type { IdempotencyKey } from 'azure-functions-idempotency';
import { TableIdempotencyStore } from 'azure-functions-idempotency/table';
import { CONTRACT_OPTIONS, describeStoreContract, type StoreUnderTest } from '../contract/storeContract';
import { useAzurite } from '../../../../test/support/azurite';
import { localRowsInTable } from '../../../../test/support/localRows';
import { freshTable } from '../../../../test/support/tables';
import type { FakeClock } from '../../../../test/support/tables';

const azuriteOf = useAzurite();

async function tableStore(clock: FakeClock, cacheSize: number): Promise<StoreUnderTest> {
  const client: TableClient = await freshTable(azuriteOf());
  const store = new TableIdempotencyStore(client, { ...CONTRACT_OPTIONS, clock, cacheSize });
  return { store, localRowsOf: (key: IdempotencyKey) => localRowsInTable(client, store.addressOf(key)) };
}

describeStoreContract('TableIdempotencyStore on Azurite', (clock) => tableStore(clock, 0));
// The completed-key cache must not change any outcome: the same suite with it on.
describeStoreContract('TableIdempotencyStore on Azurite, completed-key cache on', (clock) => tableStore(clock, 1_000));
