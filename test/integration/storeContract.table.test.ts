import { TableIdempotencyStore } from '../../src/core/public';
import { CONTRACT_OPTIONS, describeStoreContract } from '../contract/storeContract';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

const azuriteOf = useAzurite();

describeStoreContract(
  'TableIdempotencyStore on Azurite',
  async (clock) => new TableIdempotencyStore(await freshTable(azuriteOf()), { ...CONTRACT_OPTIONS, clock }),
);
