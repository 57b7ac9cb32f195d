import type { PipelineRequest } from '@azure/core-rest-pipeline';
import { TableClient, type TableEntity } from '@azure/data-tables';
import {
  deleteRowsIfUnchanged,
  keyFromMessageId,
  RecordStatus,
  SWEEP_STATE_PARTITION,
  tableAddress,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { ExpirySweeper, type ExpirySweeperOptions, type HeldKeysSource } from 'azure-functions-idempotency/table';
import { expiredRecord, insertInBatches, seedMarkerEntity } from '../../tools/bench/seedRecords';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * How one expiry sweep run cuts a partition into transactions and where its time budget stops it, on a real Azurite
 * (packages/idempotency/src/stores/table/sweep/ExpirySweeper.ts, `sweepPartition`): the chunking, which the
 * 10,000-record sweep reaches only in bulk. Each test seeds a
 * few markers in an order it chooses (by their RowKeys), counts the deletes of every transaction sent, and makes the
 * budget run out at a chosen request by moving the sweep's clock from a pipeline policy.
 */
const NOW_MS = 1_800_000_000_000;
const HOUR_MS = 3_600_000;
const azuriteOf = useAzurite();
const keyOf = (id: string): IdempotencyKey => keyFromMessageId('payments', id);

/** `count` message ids of partition `partitionKey` (of `partitionCount`), in RowKey order. */
function idsInOrder(count: number, partitionCount = 1, partitionKey = 'p000'): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count * 3; i++) if (tableAddress(keyOf(`c${i}`), partitionCount).partitionKey === partitionKey) ids.push(`c${i}`);
  return ids
    .map((id) => ({ id, rowKey: tableAddress(keyOf(id), partitionCount).rowKey }))
    .sort((a, b) => (a.rowKey < b.rowKey ? -1 : 1))
    .slice(0, count)
    .map((e) => e.id);
}
const rowKeyOf = (id: string, partitionCount = 1): string => tableAddress(keyOf(id), partitionCount).rowKey;

type Kind = 'expired' | 'leased';
/** Seeds one marker per id: expired a second ago, or past retention under a lease valid for 10 h; `localRows` local rows each. */
async function seed(
  client: TableClient,
  ids: readonly string[],
  options: { kind?: (id: string) => Kind; localRows?: (id: string) => number; partitionCount?: number } = {},
) {
  const entities: TableEntity[] = [];
  for (const id of ids) {
    const leased = options.kind?.(id) === 'leased';
    const record = leased
      ? { ...expiredRecord(keyOf(id), NOW_MS), status: RecordStatus.InProgress, leaseExpiresAtMs: NOW_MS + 10 * HOUR_MS }
      : expiredRecord(keyOf(id), NOW_MS);
    const names = Array.from({ length: options.localRows?.(id) ?? 0 }, (_, i) => `effect${i}`);
    const marker = { ...seedMarkerEntity(record, options.partitionCount ?? 1), ...(names.length > 0 ? { localRows: names.join(',') } : {}) };
    entities.push(marker);
    for (const name of names) entities.push({ partitionKey: marker.partitionKey, rowKey: `${marker.rowKey}~${name}`, kind: name });
  }
  await insertInBatches(client, entities);
  return entities;
}

/** Counts the deletes of every transaction `client` sends; runs `onBatch(n)` / `onQuery(request, n)` before each is sent. */
function watch(client: TableClient, hooks: { onBatch?: (n: number) => void; onQuery?: (request: PipelineRequest, n: number) => Promise<void> | void } = {}) {
  const transactions: number[] = [];
  let queries = 0;
  client.pipeline.addPolicy(
    {
      name: `watch${Math.random()}`,
      sendRequest: async (request, next) => {
        if (request.method === 'POST' && request.url.includes('$batch')) {
          transactions.push(
            String(request.body)
              .split('\r\n')
              .filter((l) => l.startsWith('DELETE ')).length,
          );
          hooks.onBatch?.(transactions.length);
        } else if (request.method === 'GET' && /[?&](%24|\$)filter=/.test(request.url)) await hooks.onQuery?.(request, ++queries);
        return next(request);
      },
    },
    { afterPhase: 'Retry' },
  );
  return transactions;
}

async function markersLeft(client: TableClient): Promise<string[]> {
  const keys: string[] = [];
  for await (const e of client.listEntities()) if (e.partitionKey !== SWEEP_STATE_PARTITION && !e.rowKey!.includes('~')) keys.push(e.rowKey!);
  return keys.sort();
}

async function setUp() {
  const client = await freshTable(azuriteOf());
  const clock = new FakeClock(NOW_MS);
  const sweeper = (options: Partial<ExpirySweeperOptions>) => new ExpirySweeper(client, { partitionCount: 1, budgetMs: 60_000, clock, ...options });
  return { client, clock, sweeper };
}

describe('the sweep’s transactions: at most batchSize actions, a record and its local rows together (Azurite)', () => {
  test('plain records fill each transaction to batchSize; a record with a local row never shares past it', async () => {
    const { client, sweeper } = await setUp();
    await seed(client, idsInOrder(4));
    const sent = watch(client);
    expect(await sweeper({ batchSize: 3 }).sweep()).toMatchObject({ deleted: 4, scanned: 4, partitionsCompleted: 1, stoppedByBudget: false });
    expect(sent).toEqual([3, 1]);

    const other = await setUp();
    await seed(other.client, idsInOrder(3), { localRows: () => 1 });
    const sentWithRows = watch(other.client);
    // 2 actions each: two together would be 4 > 3, so each goes alone, and the run goes on after each.
    expect(await other.sweeper({ batchSize: 3 }).sweep()).toMatchObject({ deleted: 3, deletedLocalRows: 3, stoppedByBudget: false, partitionsCompleted: 1 });
    expect(sentWithRows).toEqual([2, 2, 2]);
    expect(await markersLeft(other.client)).toEqual([]);
  });

  test('a record with more local rows than batchSize goes alone, before or after a plain one', async () => {
    for (const bigFirst of [true, false]) {
      const { client, sweeper } = await setUp();
      const [a, b] = idsInOrder(2);
      await seed(client, [a, b], { localRows: (id) => ((id === a) === bigFirst ? 4 : 0) });
      const sent = watch(client);
      expect(await sweeper({ batchSize: 3 }).sweep()).toMatchObject({ deleted: 2, deletedLocalRows: 4, stoppedByBudget: false });
      expect(sent).toEqual(bigFirst ? [5, 1] : [1, 5]);
    }
  });
});

describe('where the budget stops a run (Azurite)', () => {
  test('out of time after a full chunk: the leased row after it is neither counted nor passed', async () => {
    const { client, clock, sweeper } = await setUp();
    const ids = idsInOrder(4);
    await seed(client, ids, { kind: (id) => (id === ids[3] ? 'leased' : 'expired') });
    watch(client, { onBatch: () => clock.advance(HOUR_MS) });
    const report = await sweeper({ batchSize: 3 }).sweep();
    expect(report).toMatchObject({ deleted: 3, scanned: 3, skippedLeased: 0, stoppedByBudget: true, partitionsCompleted: 0 });
    expect(report.next).toEqual({ partitionIndex: 0, afterRowKey: rowKeyOf(ids[2]) });
  });

  test('out of time before a pre-flush: the run stops there, mid-partition', async () => {
    const { client, clock, sweeper } = await setUp();
    const ids = idsInOrder(3);
    await seed(client, ids, { localRows: () => 1 });
    const sent = watch(client, { onBatch: () => clock.advance(HOUR_MS) });
    const report = await sweeper({ batchSize: 3 }).sweep();
    expect(report).toMatchObject({ deleted: 1, deletedLocalRows: 1, stoppedByBudget: true, partitionsCompleted: 0 });
    expect(report.next).toEqual({ partitionIndex: 0, afterRowKey: rowKeyOf(ids[0]) });
    expect(sent).toEqual([2]);
    expect(await markersLeft(client)).toEqual([rowKeyOf(ids[1]), rowKeyOf(ids[2])].sort());
  });

  test('out of time between pages: no further page is read, and the partition is not taken for done', async () => {
    const { client, clock, sweeper } = await setUp();
    const ids = idsInOrder(4);
    await seed(client, ids);
    watch(client, { onBatch: () => clock.advance(HOUR_MS) });
    const report = await sweeper({ pageSize: 2 }).sweep();
    // checkpoint read, page 1, one transaction, checkpoint write
    expect(report).toMatchObject({ deleted: 2, scanned: 2, requests: 4, stoppedByBudget: true, partitionsCompleted: 0 });
    expect(report.next).toEqual({ partitionIndex: 0, afterRowKey: rowKeyOf(ids[1]) });
  });

  test('a finished partition is progress: out of time in the next one, its rows in hand are not deleted and it is not done', async () => {
    const { client, clock, sweeper } = await setUp();
    const ids = idsInOrder(2, 2, 'p001');
    await seed(client, ids, { partitionCount: 2 });
    // p000 is empty; the budget runs out as p001 is queried.
    watch(client, { onQuery: (request) => void (decodeURIComponent(request.url).includes("'p001'") && clock.advance(HOUR_MS)) });
    const report = await sweeper({ partitionCount: 2 }).sweep();
    expect(report).toMatchObject({
      deleted: 0,
      scanned: 0,
      partitionsCompleted: 1,
      stoppedByBudget: true,
      next: { partitionIndex: 1, afterRowKey: undefined },
    });
    expect(await markersLeft(client)).toHaveLength(2);
  });
});

describe('held rows the query still returns (Azurite)', () => {
  const HOLD_MS = 10 * HOUR_MS;
  const source = (ids: string[]): HeldKeysSource => ({ name: 'payments dead-letter queue', heldKeys: async () => ids.map(keyOf) });

  /** Seeds `ids`, holds `held`, and puts the held rows back as they were (past retention) just before the first query: another writer's. */
  async function heldSetUp(ids: string[], held: string[], localRows?: (id: string) => number) {
    const { client, clock, sweeper } = await setUp();
    const seeded = await seed(client, ids, { localRows });
    const other = TableClient.fromConnectionString(azuriteOf().connectionString, client.tableName, { allowInsecureConnection: true });
    const before = held.map((id) => seeded.find((e) => e.rowKey === rowKeyOf(id))!);
    const watchers = {
      restoreAndRunOut: async (n: number) => {
        if (n !== 1) return;
        for (const e of before) await other.upsertEntity(e, 'Replace');
        clock.advance(HOUR_MS);
      },
    };
    return { client, sweeper: (options: Partial<ExpirySweeperOptions>) => sweeper({ holds: [source(held)], holdMs: HOLD_MS, ...options }), watchers };
  }

  test('a held row is kept and counted, and a page of held rows alone is no progress against the budget', async () => {
    const ids = idsInOrder(4);
    const { client, sweeper, watchers } = await heldSetUp(ids, ids.slice(0, 2));
    watch(client, { onQuery: (_r, n) => watchers.restoreAndRunOut(n) });
    const logs: string[] = [];
    const report = await sweeper({ pageSize: 2, log: (l) => logs.push(l) }).sweep();
    expect(report).toMatchObject({ held: 2, heldExtended: 2, skippedHeld: 2, scanned: 4, deleted: 2, skipped: 2, stoppedByBudget: true });
    expect(report.next).toEqual({ partitionIndex: 0, afterRowKey: rowKeyOf(ids[3]) });
    expect(await markersLeft(client)).toEqual([rowKeyOf(ids[0]), rowKeyOf(ids[1])].sort());
    expect(logs[0]).toContain('skipped 2 (leased 0, held 2, changed 0, already deleted 0)');
  });

  test('a held row then a record too big for a transaction: the record still goes (a held row is no progress)', async () => {
    const ids = idsInOrder(2);
    const { client, sweeper, watchers } = await heldSetUp(ids, [ids[0]], (id) => (id === ids[1] ? 3 : 0));
    const sent = watch(client, { onQuery: (_r, n) => watchers.restoreAndRunOut(n) });
    const report = await sweeper({ batchSize: 3 }).sweep();
    expect(report).toMatchObject({ skippedHeld: 1, deleted: 1, deletedLocalRows: 3 });
    expect(sent).toEqual([4]);
    expect(await markersLeft(client)).toEqual([rowKeyOf(ids[0])]);
  });
});

describe('deleteRowsIfUnchanged fails closed on a transaction body it does not recognise (Azurite)', () => {
  /** Two rows of p000 read with their ETags, on a client whose `reshape` policy runs before the conditional one (an SDK that builds its body otherwise). */
  async function reshaped(reshape: (request: PipelineRequest) => void) {
    const client = await freshTable(azuriteOf());
    await insertInBatches(
      client,
      ['r1', 'r2'].map((rowKey) => ({ partitionKey: 'p000', rowKey, kind: 'idempotency-marker' })),
    );
    const rows = await Promise.all(['r1', 'r2'].map(async (rowKey) => ({ partitionKey: 'p000', rowKey, etag: (await client.getEntity('p000', rowKey)).etag })));
    client.pipeline.addPolicy({
      name: 'reshape',
      sendRequest: (request, next) => {
        if (request.url.includes('$batch')) reshape(request);
        return next(request);
      },
    });
    const sent = watch(client);
    return { client, rows, sent };
  }

  test.each([
    [
      'no If-Match line',
      (body: string) => body.replace(/\r\nIf-Match: \*/g, ''),
      'conditional batch delete: made 0 of 2 deletes conditional; refusing to send',
    ],
    [
      'a delete of a row it was not given',
      (body: string) => body.replace("RowKey='r2'", "RowKey='r3'"),
      'conditional batch delete: a delete in the transaction has no ETag',
    ],
  ])('%s: refused before it is sent, nothing deleted', async (_name, edit, message) => {
    const { client, rows, sent } = await reshaped((request) => void (request.body = edit(String(request.body))));
    await expect(deleteRowsIfUnchanged(client, rows)).rejects.toThrow(new Error(message));
    expect(sent).toEqual([]);
    expect(await markersLeft(client)).toEqual(['r1', 'r2']);
  });

  test('a body that is not text: refused before it is sent, nothing deleted', async () => {
    const { client, rows, sent } = await reshaped((request) => void (request.body = Buffer.from(String(request.body))));
    await expect(deleteRowsIfUnchanged(client, rows)).rejects.toThrow(new Error('conditional batch delete: unexpected transaction body type'));
    expect(sent).toEqual([]);
    expect(await markersLeft(client)).toEqual(['r1', 'r2']);
  });
});
