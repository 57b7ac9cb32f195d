import { readSweepPosition, SWEEP_STATE_PARTITION } from '../../packages/idempotency/src/stores/table/sweep/sweepCheckpoint';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';

/**
 * The sweep's checkpoint as read back from Azurite (packages/idempotency/src/stores/table/sweep/sweepCheckpoint.ts):
 * an empty `afterRowKey` (what a finished partition writes) is no position inside the partition, and a partition index
 * that is not a whole number of 0 or more starts over at partition 0.
 */
const azuriteOf = useAzurite();

test('an empty afterRowKey reads as none; a row key reads as itself', async () => {
  const client = await freshTable(azuriteOf(), 'ckpt');
  await client.createEntity({ partitionKey: SWEEP_STATE_PARTITION, rowKey: 'a', partitionIndex: 3, afterRowKey: '' });
  await client.createEntity({ partitionKey: SWEEP_STATE_PARTITION, rowKey: 'b', partitionIndex: 0, afterRowKey: 'k-7' });
  expect(await readSweepPosition(client, 'a')).toMatchObject({ partitionIndex: 3, afterRowKey: undefined, etag: expect.any(String) });
  expect(await readSweepPosition(client, 'b')).toMatchObject({ partitionIndex: 0, afterRowKey: 'k-7' });
});

test('a partition index that is negative, fractional or not a number starts at partition 0; a missing row too', async () => {
  const client = await freshTable(azuriteOf(), 'ckpt');
  for (const [rowKey, partitionIndex] of [
    ['neg', -1],
    ['frac', 2.5],
    ['text', 'x'],
  ] as const)
    await client.createEntity({ partitionKey: SWEEP_STATE_PARTITION, rowKey, partitionIndex });
  for (const name of ['neg', 'frac', 'text']) expect((await readSweepPosition(client, name)).partitionIndex).toBe(0);
  expect(await readSweepPosition(client, 'none')).toEqual({ partitionIndex: 0, afterRowKey: undefined, etag: undefined });
});
