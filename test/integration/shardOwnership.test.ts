import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { keyFromMessageId, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { misplacedPaymentRecords, strayPaymentRecords, type OwnershipCheckOptions } from '../../src/payments/shardOwnership';
import { shardOf } from '../../src/payments/shards';
import { useAzurite } from '../support/azurite';

/**
 * The layout check's own figures on Azurite (src/payments/shardOwnership.ts): what it counts, how many strays it keeps,
 * which tables the cross check reads and in what order it stops. test/integration/shardLayoutRefusal.test.ts checks the
 * refusal it drives.
 */
const azuriteOf = useAzurite();
const PARTITIONS = 4;

/** A table of its own (created), and a store on it writing payments records. */
async function shardTable() {
  const client = TableClient.fromConnectionString(azuriteOf().connectionString, `own${randomUUID().replace(/-/g, '').slice(0, 12)}`, {
    allowInsecureConnection: true,
  });
  await client.createTable();
  const store = new TableIdempotencyStore(client, { partitionCount: PARTITIONS, retentionMs: 86_400_000 });
  const completed = async (paymentId: string) => {
    const claim = await store.claim(keyFromMessageId('payments', paymentId), 'digest');
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await store.complete(claim.claim, { status: 'succeeded', chargeId: 'ch_1', amount: 100, currency: 'EUR' });
  };
  return { client, completed };
}

/** A client of a table that does not exist (read as empty, one request a partition). */
const noTable = () =>
  TableClient.fromConnectionString(azuriteOf().connectionString, `none${randomUUID().replace(/-/g, '').slice(0, 12)}`, { allowInsecureConnection: true });

/** The first `n` ids `<prefix>-<i>` shard `shard` of `count` owns. */
const ownedBy = (shard: number, count: number, prefix: string, n: number) =>
  Array.from({ length: 200 }, (_, i) => `${prefix}-${i}`)
    .filter((id) => shardOf(id, count) === shard)
    .slice(0, n);

const options = (layout: { count: number; index: number }, extra: Partial<OwnershipCheckOptions> = {}): OwnershipCheckOptions => ({
  layout,
  partitionCount: PARTITIONS,
  nowMs: Date.now(),
  callTimeoutMs: 10_000,
  ...extra,
});

describe('strayPaymentRecords (Azurite)', () => {
  test('keeps the first 5 strays by default (maxStrays otherwise), each with its owner and status and no foundOn; the records of this shard are not strays', async () => {
    const t = await shardTable();
    const strays = ownedBy(1, 2, 'gone', 8);
    for (const id of [...strays, ...ownedBy(0, 2, 'mine', 2)]) await t.completed(id);

    const report = await strayPaymentRecords(t.client, options({ count: 2, index: 0 }));
    expect(report.strays).toHaveLength(5);
    for (const stray of report.strays) {
      expect(strays).toContain(stray.paymentId);
      expect(stray).toEqual({ paymentId: stray.paymentId, owner: 1, status: 'COMPLETED' });
    }
    expect(report.checked).toBeGreaterThanOrEqual(5);
    expect(report.requests).toBeLessThanOrEqual(PARTITIONS);

    const two = await strayPaymentRecords(t.client, options({ count: 2, index: 0 }, { maxStrays: 2 }));
    expect(two.strays).toHaveLength(2);
    // Every record read when nothing stops early: 10 records, one request a partition.
    const all = await strayPaymentRecords(t.client, options({ count: 2, index: 0 }, { maxStrays: 50 }));
    expect(all).toMatchObject({ checked: 10, requests: PARTITIONS });
    expect(all.strays.map((s) => s.paymentId).sort()).toEqual([...strays].sort());
  });

  test('one record a partition at most with perPartition 1', async () => {
    const t = await shardTable();
    for (const id of ownedBy(0, 2, 'many', 12)) await t.completed(id);
    const report = await strayPaymentRecords(t.client, options({ count: 2, index: 0 }, { perPartition: 1 }));
    expect(report.strays).toEqual([]);
    expect(report.checked).toBeLessThanOrEqual(PARTITIONS);
    expect(report.checked).toBeGreaterThan(0);
    const whole = await strayPaymentRecords(t.client, options({ count: 2, index: 0 }));
    expect(whole.checked).toBe(12);
  });
});

describe('misplacedPaymentRecords (Azurite)', () => {
  test('an empty table: each other shard is read (never this one), records this shard owns found there with foundOn; the figures summed', async () => {
    const own = await shardTable();
    const shard1 = await shardTable();
    const lost = ownedBy(0, 3, 'lost', 2);
    for (const id of [...lost, ...ownedBy(1, 3, 'theirs', 2)]) await shard1.completed(id);
    const thisOne = await shardTable();
    for (const id of ownedBy(0, 3, 'self', 1)) await thisOne.completed(id);

    const report = await misplacedPaymentRecords(
      own.client,
      [
        { shard: 0, client: thisOne.client },
        { shard: 1, client: shard1.client },
        { shard: 2, client: noTable() },
      ],
      options({ count: 3, index: 0 }),
    );
    expect(report.strays.map((s) => s.paymentId).sort()).toEqual([...lost].sort());
    for (const stray of report.strays) expect(stray).toEqual({ paymentId: stray.paymentId, owner: 0, status: 'COMPLETED', foundOn: 1 });
    // Own table, shard 1 and shard 2: one request a partition each (shard 0's entry skipped); 4 records read on shard 1.
    expect(report.requests).toBe(3 * PARTITIONS);
    expect(report.checked).toBe(4);
  });

  test("a table holding its own records only needs no cross check; a stray in it is reported as the own check's", async () => {
    const own = await shardTable();
    for (const id of ownedBy(0, 2, 'kept', 1)) await own.completed(id);
    const other = await shardTable();
    for (const id of ownedBy(0, 2, 'lost', 1)) await other.completed(id);
    expect(await misplacedPaymentRecords(own.client, [{ shard: 1, client: other.client }], options({ count: 2, index: 0 }))).toEqual({
      checked: 1,
      requests: PARTITIONS,
      strays: [],
    });
    const mixed = await shardTable();
    const [stray] = ownedBy(1, 2, 'moved', 1);
    await mixed.completed(stray);
    expect(await misplacedPaymentRecords(mixed.client, [{ shard: 1, client: other.client }], options({ count: 2, index: 0 }))).toEqual({
      checked: 1,
      requests: PARTITIONS,
      strays: [{ paymentId: stray, owner: 1, status: 'COMPLETED' }],
    });
  });

  test('one shard: no request at all', async () => {
    const other = await shardTable();
    await other.completed('pay-1');
    expect(await misplacedPaymentRecords(noTable(), [{ shard: 1, client: other.client }], options({ count: 1, index: 0 }))).toEqual({
      checked: 0,
      requests: 0,
      strays: [],
    });
  });

  test('stops at maxStrays: the shards after the one that filled it are not read, and at most maxStrays are reported', async () => {
    const own = await shardTable();
    const first = await shardTable();
    for (const id of ownedBy(0, 3, 'first', 3)) await first.completed(id);
    const second = await shardTable();
    for (const id of ownedBy(0, 3, 'second', 3)) await second.completed(id);
    const report = await misplacedPaymentRecords(
      own.client,
      [
        { shard: 1, client: first.client },
        { shard: 2, client: second.client },
      ],
      options({ count: 3, index: 0 }, { maxStrays: 2 }),
    );
    expect(report.strays).toHaveLength(2);
    expect(report.strays.every((s) => s.foundOn === 1)).toBe(true);
    expect(report.requests).toBeLessThanOrEqual(2 * PARTITIONS);

    // Default 5: 3 from the first shard and 2 of the second's 3.
    const five = await misplacedPaymentRecords(
      own.client,
      [
        { shard: 1, client: first.client },
        { shard: 2, client: second.client },
      ],
      options({ count: 3, index: 0 }),
    );
    expect(five.strays).toHaveLength(5);
    expect(five.strays.filter((s) => s.foundOn === 1)).toHaveLength(3);
  });
});
