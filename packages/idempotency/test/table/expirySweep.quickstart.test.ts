import type { TableClient } from '@azure/data-tables';
// Public entries only: what a user of the package has (never `/internal`).
import { ConfigurationError, keyFromMessageId, payloadDigest, RecordStatus, type IdempotencyKey } from 'azure-functions-idempotency';
import { ExpirySweeper, TableIdempotencyStore, type HeldKeysSource } from 'azure-functions-idempotency/table';
import { useAzurite } from '../../../../test/support/azurite';
import { FakeClock, freshTable } from '../../../../test/support/tables';

/**
 * The README's "Expiring Table records", as a user of the package alone would run it: a Table store and its
 * ExpirySweeper on a real Azurite (no mock of TableClient). Records past retention go with their local rows; an
 * in-progress record under its lease, a held key's record and rows that are not the store's stay.
 */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const PARTITIONS = 4;
const azuriteOf = useAzurite();

const keyOf = (id: string): IdempotencyKey => keyFromMessageId('orders', id);
const digestOf = (id: string): string => payloadDigest({ id });

async function setUp(): Promise<{ client: TableClient; clock: FakeClock; store: TableIdempotencyStore }> {
  const clock = new FakeClock();
  const client = await freshTable(azuriteOf());
  const store = new TableIdempotencyStore(client, { retentionMs: HOUR_MS, leaseMs: 60_000, partitionCount: PARTITIONS, clock });
  return { client, clock, store };
}

async function completed(store: TableIdempotencyStore, id: string, withEffect = false): Promise<void> {
  const outcome = await store.claim(keyOf(id), digestOf(id));
  if (outcome.kind !== 'claimed') throw new Error(`expected a claim of ${id}, got ${outcome.kind}`);
  await store.complete(outcome.claim, { done: id }, withEffect ? [{ name: 'ledger', properties: { amount: 5 } }] : undefined);
}

async function rowCount(client: TableClient): Promise<number> {
  let count = 0;
  for await (const _ of client.listEntities()) count++;
  return count;
}

describe('ExpirySweeper (public entry /table) on Azurite', () => {
  test('records past retention are deleted; a leased in-progress record, a held key and other rows are kept', async () => {
    const { client, clock, store } = await setUp();
    await completed(store, 'old-1');
    await completed(store, 'old-2', true); // with a local row, deleted with it
    await completed(store, 'held');
    // In progress under a lease that outlives its retention (a long run, e.g. a heartbeat would keep it so).
    const longLease = new TableIdempotencyStore(client, { retentionMs: HOUR_MS, leaseMs: DAY_MS, partitionCount: PARTITIONS, clock });
    expect((await longLease.claim(keyOf('running'), digestOf('running'))).kind).toBe('claimed');
    await client.createEntity({ partitionKey: 'mine', rowKey: 'unrelated', note: 'not the store' });
    const rowsBefore = await rowCount(client);

    clock.advance(2 * HOUR_MS);
    await completed(store, 'fresh'); // within retention
    const held: HeldKeysSource = { name: 'orders dead-letter queue', heldKeys: async () => [keyOf('held')] };
    const logs: string[] = [];
    const sweeper = new ExpirySweeper(client, { partitionCount: PARTITIONS, budgetMs: 60_000, clock, holds: [held], holdMs: DAY_MS, log: (l) => logs.push(l) });
    const report = await sweeper.sweep();

    expect(report).toMatchObject({ deleted: 2, deletedLocalRows: 1, skippedLeased: 1, held: 1, heldWithRecord: 1, heldExtended: 1 });
    expect(report).toMatchObject({ stoppedByBudget: false, partitionsCompleted: PARTITIONS, checkpointSaved: true });
    expect(await store.get(keyOf('old-1'))).toBeUndefined();
    expect(await store.get(keyOf('old-2'))).toBeUndefined();
    expect(await store.get(keyOf('held'))).toMatchObject({ result: { done: 'held' }, retentionExpiresAtMs: clock.now + 2 * DAY_MS });
    expect(await store.get(keyOf('running'))).toMatchObject({ status: RecordStatus.InProgress });
    expect(await store.get(keyOf('fresh'))).toBeDefined();
    expect(await client.getEntity('mine', 'unrelated')).toMatchObject({ note: 'not the store' });
    // 2 records and 1 local row gone; 1 fresh record and the checkpoint row added.
    expect(await rowCount(client)).toBe(rowsBefore - 3 + 2);
    expect(logs).toEqual([expect.stringMatching(/^expiry sweep: held 1 .*deleted 2/)]);

    // The key held no more: a later run deletes it once its moved retention has passed.
    clock.advance(2 * DAY_MS + 1);
    const later = await new ExpirySweeper(client, { partitionCount: PARTITIONS, budgetMs: 60_000, clock }).sweep();
    expect(later.deleted).toBe(3); // held, fresh, and running (its lease lapsed)
    expect(await store.get(keyOf('held'))).toBeUndefined();
  });

  test('a held-keys source that throws fails the run before anything is deleted', async () => {
    const { client, clock, store } = await setUp();
    await completed(store, 'old-1');
    clock.advance(2 * HOUR_MS);
    const broken: HeldKeysSource = { name: 'broken', heldKeys: () => Promise.reject(new Error('queue unreachable')) };
    await expect(new ExpirySweeper(client, { partitionCount: PARTITIONS, budgetMs: 60_000, clock, holds: [broken], holdMs: DAY_MS }).sweep()).rejects.toThrow(
      'queue unreachable',
    );
    expect(await store.get(keyOf('old-1'))).toBeDefined();
  });

  test('options out of range throw ConfigurationError from the constructor', async () => {
    const { client } = await setUp();
    const holds: HeldKeysSource[] = [{ name: 'h', heldKeys: async () => [] }];
    expect(() => new ExpirySweeper(client, { budgetMs: 0 })).toThrow(ConfigurationError);
    expect(() => new ExpirySweeper(client, { budgetMs: 1000, pageSize: 1001 })).toThrow(ConfigurationError);
    expect(() => new ExpirySweeper(client, { budgetMs: 1000, batchSize: 101 })).toThrow(ConfigurationError);
    expect(() => new ExpirySweeper(client, { budgetMs: 1000, holds })).toThrow(/holdMs/);
  });
});
