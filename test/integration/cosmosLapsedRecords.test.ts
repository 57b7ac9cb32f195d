import { CosmosIdempotencyStore, keyFromMessageId, payloadDigest } from 'azure-functions-idempotency/internal';
import { cosmosLapsedInProgressRecords } from '../../src/lifecycle/cosmosLapsedRecords';
import { CosmosEmulator } from '../support/cosmos';
import { FakeClock } from '../support/tables';

/**
 * The reconciler's read of the Cosmos store (`IDEMPOTENCY_STORE=cosmos`) on the in-process emulator: the payments
 * records still in progress whose lease lapsed before a bound, across logical partitions (one per key), page by page,
 * and nothing else (completed, released, leased, another consumer's). The Table store's read: lapsedRecords.test.ts.
 */
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => cosmos?.stop());

test('cosmosLapsedInProgressRecords: only one consumer in-progress records whose lease lapsed at or before the bound, over pages', async () => {
  const container = await cosmos.freshIdempotencyContainer();
  const clock = new FakeClock(1_000_000);
  const store = new CosmosIdempotencyStore(container, { retentionMs: 86_400_000, leaseMs: 60_000, clock });
  const claim = async (consumer: string, id: string) => {
    const outcome = await store.claim(keyFromMessageId(consumer, id), payloadDigest({ id }));
    if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
    return outcome.claim;
  };
  const stuck = ['pay-1', 'pay-2', 'pay-3', 'pay-4', 'pay-5', 'pay-6'];
  for (const id of stuck) await claim('payments', id);
  await claim('orders', 'ord-1'); // another consumer's
  await store.complete(await claim('payments', 'pay-done'), { status: 'succeeded' }, [{ name: 'payment', properties: { state: 'charged' } }]);
  await store.release(await claim('payments', 'pay-released'), 'crashed');
  clock.advance(10 * 60_000);
  await claim('payments', 'pay-fresh'); // its lease runs until 11 min + 60 s
  const bound = clock.now - 5 * 60_000; // leases that lapsed 5 min ago or more
  const found: string[] = [];
  for await (const record of cosmosLapsedInProgressRecords(container, { consumer: 'payments', lapsedBeforeMs: bound, pageSize: 4 })) {
    expect(record).toMatchObject({ consumer: 'payments', status: 'IN_PROGRESS', attempt: 1 });
    expect(record.leaseExpiresAtMs).toBeLessThanOrEqual(bound);
    expect(record.etag).not.toBe('');
    found.push(record.key);
  }
  expect(found.sort()).toEqual(stuck);
  // Before the leases lapsed: none.
  const none: string[] = [];
  for await (const record of cosmosLapsedInProgressRecords(container, { consumer: 'payments', lapsedBeforeMs: 1_000_000 })) none.push(record.key);
  expect(none).toEqual([]);
});
