import { RestError, type PipelineRequest } from '@azure/core-rest-pipeline';
import { TableClient, type TableEntity } from '@azure/data-tables';
import {
  deleteRowsIfUnchanged,
  keyFromMessageId,
  payloadDigest,
  RecordStatus,
  StoreRequestError,
  StoreUnavailableError,
  SWEEP_STATE_PARTITION,
  TableIdempotencyStore,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { expiredRecord, insertInBatches, seedMarkerEntity } from '../../tools/bench/seedRecords';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * The expiry sweep's delete path on a real Azurite (packages/idempotency/src/stores/table/sweep/sweepDelete.ts,
 * conditionalBatchDelete.ts, sweepQuery.ts). Each test
 * asserts what is left in the table and the run's report: a record that changed or went since the query is never
 * deleted by the version the sweep read, the transactions and re-reads it takes, the single deletes it falls back to.
 * Races are made with a second client (another process, in effect) from a pipeline policy of the sweep's client.
 */
const NOW_MS = 1_800_000_000_000;
const DIGEST = payloadDigest({ sweep: 1 });
const azuriteOf = useAzurite();

const keyOf = (i: number): IdempotencyKey => keyFromMessageId('payments', `sweep-${i}`);
/** Another client (another process, in effect) on the same table. */
const otherClient = (client: TableClient): TableClient =>
  TableClient.fromConnectionString(azuriteOf().connectionString, client.tableName, { allowInsecureConnection: true });

/** One partition (p000), `count` records expired a second before NOW_MS; `withLocalRows` of them list two local rows. */
async function setUp(count: number, withLocalRows = 0) {
  const client = await freshTable(azuriteOf());
  const entities: TableEntity[] = [];
  const markers: TableEntity[] = [];
  for (let i = 0; i < count; i++) {
    const marker = {
      ...seedMarkerEntity({ ...expiredRecord(keyOf(i), NOW_MS), digest: DIGEST }, 1),
      ...(i < withLocalRows ? { localRows: 'ledger,receipt' } : {}),
    };
    markers.push(marker);
    entities.push(marker);
    if (i < withLocalRows)
      for (const name of ['ledger', 'receipt']) entities.push({ partitionKey: marker.partitionKey, rowKey: `${marker.rowKey}~${name}`, kind: name });
  }
  await insertInBatches(client, entities);
  const clock = new FakeClock(NOW_MS);
  const other = otherClient(client);
  const store = new TableIdempotencyStore(other, { retentionMs: 86_400_000, leaseMs: 60_000, partitionCount: 1, clock });
  const sweeper = new ExpirySweeper(client, { budgetMs: 600_000, partitionCount: 1, clock });
  return { client, other, store, sweeper, markers, keyOfMarker: (m: TableEntity) => keyOf(markers.indexOf(m)) };
}

/** Runs `before(request)` ahead of each request of `client` that `when` selects; counts every request sent. */
function intercept(client: TableClient, when: (request: PipelineRequest) => boolean, before: (request: PipelineRequest, n: number) => Promise<void>) {
  const seen = { requests: 0, matched: 0 };
  client.pipeline.addPolicy(
    {
      name: `intercept${Math.random()}`,
      sendRequest: async (request, next) => {
        seen.requests++;
        if (when(request)) await before(request, ++seen.matched);
        return next(request);
      },
    },
    { afterPhase: 'Retry' },
  );
  return seen;
}

const isBatch = (r: PipelineRequest): boolean => r.method === 'POST' && r.url.includes('$batch');
const isSingleDelete = (r: PipelineRequest): boolean => r.method === 'DELETE';

async function rowKeys(client: TableClient): Promise<string[]> {
  const keys: string[] = [];
  for await (const e of client.listEntities()) if (e.partitionKey !== SWEEP_STATE_PARTITION) keys.push(e.rowKey!);
  return keys.sort();
}

describe('the sweep deletes only the version it read (Azurite)', () => {
  test('a row deleted and a record re-claimed before the transaction: the chunk is re-read and the rest deleted in one more transaction', async () => {
    const { client, other, store, sweeper, markers, keyOfMarker } = await setUp(6);
    const [gone, reclaimed] = markers;
    const seen = intercept(client, isBatch, async (_request, n) => {
      if (n > 1) return;
      await other.deleteEntity(gone.partitionKey, gone.rowKey);
      expect((await store.claim(keyOfMarker(reclaimed), DIGEST)).kind).toMatch(/claimed/);
    });
    const report = await sweeper.sweep();
    // checkpoint read, query, failed transaction, re-read, transaction, checkpoint write
    expect(report).toMatchObject({ scanned: 6, deleted: 4, alreadyDeleted: 1, skippedChanged: 1, skipped: 2, requests: 6 });
    expect(seen.requests).toBe(6);
    expect(await rowKeys(client)).toEqual([reclaimed.rowKey]);
    expect(await store.get(keyOfMarker(reclaimed))).toMatchObject({ status: RecordStatus.InProgress });
  });

  test('every row of the chunk gone before the transaction: the re-read finds none and no second transaction is sent', async () => {
    const { client, other, sweeper, markers } = await setUp(3);
    intercept(client, isBatch, async (_request, n) => {
      if (n === 1) for (const m of markers) await other.deleteEntity(m.partitionKey, m.rowKey);
    });
    const report = await sweeper.sweep();
    expect(report).toMatchObject({ scanned: 3, deleted: 0, alreadyDeleted: 3, skippedChanged: 0, requests: 5 });
  });

  test('a chunk that changes before each of 3 transactions is re-read once more and deleted row by row, local rows in one transaction each', async () => {
    const { client, other, sweeper, markers } = await setUp(5, 2);
    const busy = markers[4]; // no local rows: a single conditional DELETE at the end
    const single = intercept(
      client,
      (r) => isBatch(r) || isSingleDelete(r),
      async (_request, n) => {
        // Still expired, but a new version: the transaction fails on its ETag (412).
        if (n <= 3) await other.updateEntity({ partitionKey: busy.partitionKey, rowKey: busy.rowKey, touched: n }, 'Merge');
      },
    );
    const report = await sweeper.sweep();
    // checkpoint read, query, 3 failed transactions, 3 re-reads, 3 DELETEs + 2 transactions, checkpoint write
    expect(report).toMatchObject({ scanned: 5, deleted: 5, deletedLocalRows: 4, alreadyDeleted: 0, skippedChanged: 0, requests: 14 });
    expect(single.matched).toBe(3 + 5);
    expect(await rowKeys(client)).toEqual([]);
  });

  test('row by row: records re-claimed just before their own delete survive (412), with or without local rows; those deleted by another sweep count as already deleted (404)', async () => {
    const { client, other, store, sweeper, markers, keyOfMarker } = await setUp(6, 2);
    // markers 0 and 1 list local rows (deleted by a transaction each); 2 to 5 have none (a conditional DELETE each)
    const reclaimed = [markers[0], markers[3]];
    const gone = [markers[2], markers[4], markers[5]];
    let batches = 0;
    intercept(
      client,
      (r) => isBatch(r) || isSingleDelete(r),
      async (request) => {
        if (isBatch(request) && ++batches <= 3) {
          await other.updateEntity({ partitionKey: gone[0].partitionKey, rowKey: gone[0].rowKey, touched: batches }, 'Merge');
          return;
        }
        const target = isBatch(request) ? (typeof request.body === 'string' ? request.body : '') : request.url;
        for (const m of reclaimed) if (target.includes(m.rowKey)) expect((await store.claim(keyOfMarker(m), DIGEST)).kind).toMatch(/claimed/);
        for (const m of gone) if (isSingleDelete(request) && target.includes(m.rowKey)) await other.deleteEntity(m.partitionKey, m.rowKey);
      },
    );
    const report = await sweeper.sweep();
    expect(report).toMatchObject({ scanned: 6, deleted: 1, deletedLocalRows: 2, alreadyDeleted: 3, skippedChanged: 2, skipped: 5 });
    // The re-claimed records' deletes failed; a new lifetime's claim removed its old local rows itself.
    expect(await rowKeys(client)).toEqual(reclaimed.map((m) => m.rowKey).sort());
    for (const m of reclaimed) expect(await store.get(keyOfMarker(m))).toMatchObject({ status: RecordStatus.InProgress });
  });

  test('a delete the service cannot answer fails the run as StoreUnavailableError named expirySweep.delete, in a transaction or row by row', async () => {
    const failing = async (when: (r: PipelineRequest, batches: number) => boolean) => {
      const { client, other, sweeper, markers } = await setUp(2);
      let batches = 0;
      client.pipeline.addPolicy({
        name: 'unavailable',
        sendRequest: async (request, next) => {
          if (isBatch(request)) batches++;
          if (when(request, batches)) throw new RestError('busy', { statusCode: 503 });
          // The first 3 transactions find a row changed (412): then the sweep goes row by row.
          if (isBatch(request) && batches <= 3)
            await other.updateEntity({ partitionKey: markers[0].partitionKey, rowKey: markers[0].rowKey, n: batches }, 'Merge');
          return next(request);
        },
      });
      const error = await sweeper.sweep().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ operation: 'expirySweep.delete' });
    };
    await failing((r) => isBatch(r));
    await failing((r) => isSingleDelete(r));
  });

  test('a 409 answer to a delete transaction is the store’s request error, named expirySweep.delete; nothing is deleted', async () => {
    const { client, sweeper } = await setUp(2);
    client.pipeline.addPolicy({
      name: 'conflictOnBatch',
      sendRequest: async (request, next) => {
        if (isBatch(request)) throw new RestError('conflict', { statusCode: 409 });
        return next(request);
      },
    });
    const error = await sweeper.sweep().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({ message: 'unexpected 409 answer to a delete transaction', operation: 'expirySweep.delete', statusCode: 409 });
    expect(await rowKeys(client)).toHaveLength(2);
  });

  test('a query the service cannot answer fails the run as StoreUnavailableError, named expirySweep.query', async () => {
    const { client, sweeper } = await setUp(2);
    client.pipeline.addPolicy({
      name: 'queryUnavailable',
      sendRequest: async (request, next) => {
        if (request.method === 'GET' && /[?&](%24|\$)filter=/.test(request.url)) throw new RestError('busy', { statusCode: 503 });
        return next(request);
      },
    });
    const error = await sweeper.sweep().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ operation: 'expirySweep.query' });
    expect(await rowKeys(client)).toHaveLength(2);
  });
});

describe('the sweep selects only expired markers, page by page (Azurite)', () => {
  test('pages of 2: every page is one request; rows of other kinds and markers not yet expired are never scanned', async () => {
    const { client } = await setUp(5);
    const live = seedMarkerEntity({ ...expiredRecord(keyOf(100), NOW_MS), retentionExpiresAtMs: NOW_MS + 1 }, 1);
    const atCutoff = seedMarkerEntity({ ...expiredRecord(keyOf(101), NOW_MS), retentionExpiresAtMs: NOW_MS }, 1);
    const foreign = { partitionKey: 'p000', rowKey: 'zz-foreign', kind: 'ledger', retentionExpiresAtMs: { value: '1', type: 'Int64' as const } };
    await insertInBatches(client, [live, atCutoff, foreign]);
    const seen = intercept(
      client,
      () => false,
      async () => undefined,
    );
    const report = await new ExpirySweeper(client, { budgetMs: 600_000, partitionCount: 1, pageSize: 2, clock: new FakeClock(NOW_MS) }).sweep();
    // 6 expired markers in 3 pages (and a 4th, empty, when the service answers the last full page with a continuation)
    expect(report).toMatchObject({ scanned: 6, deleted: 6, skipped: 0 });
    expect(report.requests).toBe(seen.requests);
    expect(report.requests).toBeLessThanOrEqual(1 + 4 + 3 + 1);
    expect(await rowKeys(client)).toEqual([live.rowKey, 'zz-foreign'].sort());
  });

  test('a resumed run starts after the checkpoint’s RowKey, quotes and all', async () => {
    const { client, markers } = await setUp(12);
    // Hex RowKeys: those from "8" on sort after "8'" (a quote sorts before every digit and letter).
    await client.createEntity({ partitionKey: SWEEP_STATE_PARTITION, rowKey: 'expiry', kind: 'sweep-checkpoint', partitionIndex: 0, afterRowKey: "8'" });
    const after = markers.filter((m) => m.rowKey > "8'").map((m) => m.rowKey);
    const before = markers.filter((m) => m.rowKey < "8'").map((m) => m.rowKey);
    expect(after.length * before.length).toBeGreaterThan(0);
    const report = await new ExpirySweeper(client, { budgetMs: 600_000, partitionCount: 1, clock: new FakeClock(NOW_MS) }).sweep();
    expect(report.deleted).toBe(after.length);
    expect(await rowKeys(client)).toEqual(before.sort());
  });
});

describe('deleteRowsIfUnchanged (Azurite)', () => {
  const row = (rowKey: string) => ({ partitionKey: 'p000', rowKey, kind: 'idempotency-marker' });
  async function versions(client: TableClient, keys: string[]) {
    return Promise.all(keys.map(async (k) => ({ partitionKey: 'p000', rowKey: k, etag: (await client.getEntity('p000', k)).etag })));
  }

  test('keys with quotes, spaces, percent signs and accents are matched to their ETags; a stale one fails the whole transaction', async () => {
    const client = await freshTable(azuriteOf());
    const keys = ["o'brien", 'a b', '100%', 'café', "''"];
    await insertInBatches(client, keys.map(row));
    const read = await versions(client, keys);
    await otherClient(client).updateEntity({ partitionKey: 'p000', rowKey: 'café', n: 1 }, 'Merge');
    await expect(deleteRowsIfUnchanged(client, read)).rejects.toMatchObject({ statusCode: 412 });
    expect(await rowKeys(client)).toHaveLength(5);
    await deleteRowsIfUnchanged(client, await versions(client, keys));
    expect(await rowKeys(client)).toEqual([]);
  });

  test('no rows: no request; a row listed twice: refused before anything is sent', async () => {
    const client = await freshTable(azuriteOf());
    await insertInBatches(client, [row('r1')]);
    const seen = intercept(
      client,
      () => false,
      async () => undefined,
    );
    await deleteRowsIfUnchanged(client, []);
    const [r1] = await versions(client, ['r1']);
    const sent = seen.requests;
    await expect(deleteRowsIfUnchanged(client, [r1, r1])).rejects.toThrow(new RangeError('a transaction may delete each row once'));
    expect(seen.requests).toBe(sent);
    expect(sent).toBe(1); // the read of r1
    expect(await rowKeys(client)).toEqual(['r1']);
  });

  test('the client’s other transactions are left as the SDK sends them, before and after a conditional delete', async () => {
    const client = await freshTable(azuriteOf());
    await insertInBatches(client, [row('r1'), row('r2'), row('r3')]);
    await deleteRowsIfUnchanged(client, await versions(client, ['r1']));
    // A plain transaction deletes unconditionally (If-Match: *): r2 changed since nobody read it, and goes anyway.
    await otherClient(client).updateEntity({ ...row('r2'), n: 1 }, 'Merge');
    await client.submitTransaction([['delete', { partitionKey: 'p000', rowKey: 'r2' }]]);
    await client.submitTransaction([['create', row('r4')]]);
    await deleteRowsIfUnchanged(client, await versions(client, ['r3', 'r4']));
    expect(await rowKeys(client)).toEqual([]);
  });
});
