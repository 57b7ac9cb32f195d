import { allPartitions, keyFromMessageId, payloadDigest, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { lapsedInProgressRecords } from '../../src/lifecycle/lapsedRecords';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * The reconciler's read on a real Azurite: the payments records still in progress whose lease lapsed before a bound,
 * across every partition, and nothing else (completed, released, leased, another consumer's).
 */
const azuriteOf = useAzurite();

test('lapsedInProgressRecords: only one consumer in-progress records whose lease lapsed at or before the bound, from every partition', async () => {
  const client = await freshTable(azuriteOf());
  const clock = new FakeClock(1_000_000);
  const store = new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000, partitionCount: 4, clock });
  await store.ensureTable();
  const claim = async (consumer: string, id: string) => {
    const outcome = await store.claim(keyFromMessageId(consumer, id), payloadDigest({ id }));
    if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
    return outcome.claim;
  };
  const stuck = ['pay-1', 'pay-2', 'pay-3', 'pay-4', 'pay-5', 'pay-6'];
  for (const id of stuck) await claim('payments', id);
  await claim('orders', 'ord-1'); // another consumer's
  await store.complete(await claim('payments', 'pay-done'), { status: 'succeeded' });
  await store.release(await claim('payments', 'pay-released'), 'crashed');
  clock.advance(10 * 60_000);
  await claim('payments', 'pay-fresh'); // its lease runs until 11 min + 60 s
  const bound = clock.now - 5 * 60_000; // leases that lapsed 5 min ago or more
  const found: string[] = [];
  for await (const record of lapsedInProgressRecords(client, { consumer: 'payments', partitionCount: 4, lapsedBeforeMs: bound })) {
    expect(record).toMatchObject({ consumer: 'payments', status: 'IN_PROGRESS', attempt: 1 });
    expect(record.leaseExpiresAtMs).toBeLessThanOrEqual(bound);
    found.push(record.key);
  }
  expect(found.sort()).toEqual(stuck);
  // Before the leases lapsed: none.
  const none: string[] = [];
  for await (const record of lapsedInProgressRecords(client, { consumer: 'payments', partitionCount: 4, lapsedBeforeMs: 1_000_000 })) none.push(record.key);
  expect(none).toEqual([]);
});

test('a pass stopped by its budget leaves its position in the partition it was reading; the next pass starts there and wraps round (issue 43: no partition starves)', async () => {
  const client = await freshTable(azuriteOf());
  const clock = new FakeClock(1_000_000);
  const store = new TableIdempotencyStore(client, { retentionMs: 86_400_000, leaseMs: 60_000, partitionCount: 4, clock });
  await store.ensureTable();
  for (let n = 0; n < 24; n++) await store.claim(keyFromMessageId('payments', `pay-${n}`), payloadDigest({ n }));
  clock.advance(10 * 60_000);
  const bound = clock.now - 5 * 60_000;
  const position = { partition: 0 };
  const partitionOf = (key: string) => store.addressOf(keyFromMessageId('payments', key)).partitionKey;
  // First pass: the budget stops it after 3 records (all in the first partition that has any).
  const first: string[] = [];
  for await (const record of lapsedInProgressRecords(client, { consumer: 'payments', partitionCount: 4, lapsedBeforeMs: bound, position })) {
    first.push(record.key);
    if (first.length === 3) break;
  }
  const stoppedIn = position.partition;
  expect(new Set(first.map(partitionOf))).toEqual(new Set([allPartitions(4)[stoppedIn]]));
  // Second pass: starts in that partition, reads every record once over the wrap, and ends back at 0.
  const second: string[] = [];
  for await (const record of lapsedInProgressRecords(client, { consumer: 'payments', partitionCount: 4, lapsedBeforeMs: bound, position }))
    second.push(record.key);
  expect(partitionOf(second[0])).toBe(partitionOf(first[0]));
  expect(second.length).toBe(24);
  expect(new Set(second).size).toBe(24);
  expect(position.partition).toBe(0);
});
