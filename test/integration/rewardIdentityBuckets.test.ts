import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

/**
 * Issue 44.6: an identity's row lives in bucket `hash % identityBuckets`; raising `identityBuckets` (as the docs advise
 * with more throughput units) moved where an identity is looked for, so a reservation made under the old count was not
 * found and an identity reused for another customer applied twice. The index now records its layouts (a row in the
 * table) and looks for an identity in every layout still within retention.
 */

const azuriteOf = useAzurite();

const cloudEvent = (id: string, customerId: string, amount: number) => ({
  specversion: '1.0',
  type: 'PaymentSucceeded',
  source: '/payments',
  id,
  data: { paymentId: id, customerId, amount, currency: 'EUR' },
});

test('identities reserved with 1 bucket are still found after a change to 4 (and back to 1): a reused id is parked, never applied twice', async () => {
  const table = await freshTable(azuriteOf(), 'ib');
  const parking = new ParkingStore(await freshTable(azuriteOf(), 'ibp'));
  const consumerWith = (identityBuckets: number) =>
    new RewardsConsumer({ ledger: new RewardsLedger(table, undefined, undefined, { identityBuckets }), parking });
  // Ids whose bucket under 4 is not 0 (under 1 every id is in i-0).
  const probe = new RewardsLedger(table, undefined, undefined, { identityBuckets: 4 });
  const ids = Array.from({ length: 40 }, (_, i) => `evt-${i}`)
    .filter((id) => probe.identities.partitionOf(RewardsLedger.markerOf({ key: { consumer: 'rewards', key: JSON.stringify(['/payments', id]) } })) !== 'i-0')
    .slice(0, 3);
  expect(ids).toHaveLength(3);
  expect(await consumerWith(1).handleBatch(ids.map((id) => cloudEvent(id, 'ann', 1000)))).toMatchObject({ applied: 3 });
  // The deployment raises identityBuckets to 4: the same ids under other customers (other payloads) are key reuse.
  const raised = await consumerWith(4).handleBatch([...ids.map((id) => cloudEvent(id, 'bo', 2000)), cloudEvent('evt-new', 'bo', 500)]);
  expect(raised).toMatchObject({ applied: 1, parked: 3 });
  // The same payloads again (a replay to another customer's partition is impossible: same customer) are duplicates.
  expect(await consumerWith(4).handleBatch(ids.map((id) => cloudEvent(id, 'ann', 1000)))).toMatchObject({ applied: 0, duplicates: 3 });
  // And back to 1 (a rollback): what was reserved under 4 is found too.
  expect(await consumerWith(1).handleBatch([cloudEvent('evt-new', 'cy', 700)])).toMatchObject({ applied: 0, parked: 1 });
  const ledger = new RewardsLedger(table);
  expect([await ledger.balanceOf('ann'), await ledger.balanceOf('bo'), await ledger.balanceOf('cy')]).toEqual([30, 5, 0]);
  expect((await parking.list('rewards')).map((row) => row.reason)).toEqual(['key-reused', 'key-reused', 'key-reused', 'key-reused']);
});
