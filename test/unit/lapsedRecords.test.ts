/**
 * The reconciler's read of the Table store (src/lifecycle/lapsedRecords.ts), on a fake TableClient. The query it sends per partition, the order of the partitions and where a pass
 * leaves its position, a table not created yet, and a failing query as the store's error.
 */
import type { TableClient } from '@azure/data-tables';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency';
import { lapsedInProgressFilter, lapsedInProgressRecords, type ReconcilePosition } from '../../src/lifecycle/lapsedRecords';

const marker = (partitionKey: string, key: string) => ({
  partitionKey,
  rowKey: `row-${key}`,
  consumer: 'payments',
  idempotencyKey: key,
  status: 'IN_PROGRESS',
  digest: 'd',
  attempt: 1,
  ownerId: 'o',
  leaseExpiresAtMs: 5,
  retentionExpiresAtMs: 10,
  createdAtMs: 1,
  updatedAtMs: 1,
  etag: 'e',
});

/** A table whose query answers, per partition, the pages in `pages` (an Error is thrown at that page). */
function table(pages: Record<string, Array<unknown[] | Error>>) {
  const queries: Array<{ filter: string; maxPageSize: number | undefined }> = [];
  const client = {
    listEntities: ({ queryOptions }: { queryOptions: { filter: string } }) => ({
      byPage: ({ maxPageSize }: { maxPageSize?: number }) => {
        queries.push({ filter: queryOptions.filter, maxPageSize });
        const partition = /PartitionKey eq '([^']+)'/.exec(queryOptions.filter)![1];
        const list = [...(pages[partition] ?? [])];
        return {
          next: async () => {
            const page = list.shift();
            if (page instanceof Error) throw page;
            return page === undefined ? { done: true, value: undefined } : { done: false, value: page };
          },
        };
      },
    }),
  } as unknown as TableClient;
  return { client, queries };
}

async function keysOf(records: AsyncIterable<{ key: string }>, take = Infinity): Promise<string[]> {
  const keys: string[] = [];
  for await (const r of records) {
    keys.push(r.key);
    if (keys.length >= take) break;
  }
  return keys;
}

test('the filter: one partition, markers of the consumer (quotes doubled), in progress, lease lapsed at or before the bound (whole ms)', () => {
  expect(lapsedInProgressFilter('p001', "o'brien", 1234.9)).toBe(
    "PartitionKey eq 'p001' and kind eq 'idempotency-marker' and consumer eq 'o''brien' and status eq 'IN_PROGRESS' and leaseExpiresAtMs le 1234L",
  );
});

test('every partition is read in turn, page by page (100 a page), each marker as a record; a full pass ends back at partition 0', async () => {
  const t = table({ p000: [[marker('p000', 'a')], [marker('p000', 'b')]], p002: [[marker('p002', 'c')]] });
  const position: ReconcilePosition = { partition: 0 };
  const keys = await keysOf(lapsedInProgressRecords(t.client, { consumer: 'payments', partitionCount: 3, lapsedBeforeMs: 99, position }));
  expect(keys).toEqual(['a', 'b', 'c']);
  expect(t.queries.map((q) => [/PartitionKey eq '([^']+)'/.exec(q.filter)![1], q.maxPageSize])).toEqual([
    ['p000', 100],
    ['p001', 100],
    ['p002', 100],
  ]);
  expect(t.queries[0].filter).toBe(lapsedInProgressFilter('p000', 'payments', 99));
  expect(position.partition).toBe(0);
});

test('a pass stopped in a partition leaves its position there; the next starts from it and wraps round', async () => {
  const t = table({ p000: [[marker('p000', 'a')]], p001: [[marker('p001', 'b')]], p002: [[marker('p002', 'c')]] });
  const position: ReconcilePosition = { partition: 1 };
  expect(await keysOf(lapsedInProgressRecords(t.client, { consumer: 'payments', partitionCount: 3, lapsedBeforeMs: 99, position }), 2)).toEqual(['b', 'c']);
  expect(position.partition).toBe(2);
  expect(await keysOf(lapsedInProgressRecords(t.client, { consumer: 'payments', partitionCount: 3, lapsedBeforeMs: 99, position }))).toEqual(['c', 'a', 'b']);
  expect(position.partition).toBe(0);
  // A position past the partitions (the count was lowered) wraps round too.
  expect(await keysOf(lapsedInProgressRecords(t.client, { consumer: 'payments', partitionCount: 3, lapsedBeforeMs: 99, position: { partition: 4 } }))).toEqual([
    'b',
    'c',
    'a',
  ]);
  // Without a position every pass starts at partition 0.
  expect(await keysOf(lapsedInProgressRecords(t.client, { consumer: 'payments', partitionCount: 3, lapsedBeforeMs: 99 }))).toEqual(['a', 'b', 'c']);
});

test('no table yet (404): nothing in progress, no error; any other failure is the store’s error, named reconcile.query', async () => {
  const missing = table({ p000: [Object.assign(new Error('TableNotFound'), { statusCode: 404 })], p001: [[marker('p001', 'b')]] });
  expect(await keysOf(lapsedInProgressRecords(missing.client, { consumer: 'payments', partitionCount: 2, lapsedBeforeMs: 99 }))).toEqual([]);
  const down = table({ p000: [Object.assign(new Error('busy'), { statusCode: 503 })] });
  const unavailable = await keysOf(lapsedInProgressRecords(down.client, { consumer: 'payments', partitionCount: 1, lapsedBeforeMs: 99 })).catch(
    (e: unknown) => e,
  );
  expect(unavailable).toBeInstanceOf(StoreUnavailableError);
  expect((unavailable as StoreUnavailableError).operation).toBe('reconcile.query');
  const refused = table({ p000: [Object.assign(new Error('bad'), { statusCode: 400 })] });
  await expect(keysOf(lapsedInProgressRecords(refused.client, { consumer: 'payments', partitionCount: 1, lapsedBeforeMs: 99 }))).rejects.toBeInstanceOf(
    StoreRequestError,
  );
});
