import { createHttpHeaders, RestError, type PipelineRequest, type PipelineResponse } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import { randomUUID } from 'node:crypto';
import { keyFromMessageId, RecordStatus, StoreRequestError, StoreUnavailableError, tableAddress } from 'azure-functions-idempotency/internal';
import { liveMarkerSample } from '../../src/lifecycle/lapsedRecords';
import { misplacedPaymentRecords, strayPaymentRecords, type OwnershipCheckOptions } from '../../src/payments/shardOwnership';
import { shardOf } from '../../src/payments/shards';
import { insertInBatches, seedMarkerEntity } from '../../tools/bench/seedRecords';
import { useAzurite } from '../support/azurite';

/**
 * The layout check's read (src/lifecycle/lapsedRecords.ts `liveMarkerSample`, src/payments/shardOwnership.ts) on Azurite,
 * beside the ownership check's own tests: Azure's empty pages with a continuation (answered here by a
 * policy, as docs/ENVIRONMENT.md says Azure answers a filtered scan that hits its limit), the retention filter sent to
 * the service, a read the service refuses or never answers, and where the sample stops once it has enough strays.
 */
const azuriteOf = useAzurite();
const PARTITIONS = 4;
const NOW_MS = Date.now();
const HOUR_MS = 3_600_000;
const isQuery = (request: PipelineRequest) => request.method === 'GET' && /[?&](%24|\$)filter=/.test(request.url);
const partitionOf = (request: PipelineRequest) => /PartitionKey eq '(p[0-9a-f]{3})'/.exec(new URL(request.url).searchParams.get('$filter') ?? '')?.[1];

async function table(): Promise<TableClient> {
  const client = TableClient.fromConnectionString(azuriteOf().connectionString, `smp${randomUUID().replace(/-/g, '').slice(0, 12)}`, {
    allowInsecureConnection: true,
  });
  await client.createTable();
  return client;
}

/** Payments markers, live for an hour (or expired a second ago). */
async function seed(client: TableClient, ids: readonly string[], expired: (id: string) => boolean = () => false) {
  await insertInBatches(
    client,
    ids.map((id) =>
      seedMarkerEntity(
        {
          key: keyFromMessageId('payments', id),
          status: RecordStatus.Completed,
          leaseExpiresAtMs: 0,
          retentionExpiresAtMs: expired(id) ? NOW_MS - 1_000 : NOW_MS + HOUR_MS,
          updatedAtMs: NOW_MS - HOUR_MS,
        },
        PARTITIONS,
      ),
    ),
  );
}

const addressOf = (id: string) => tableAddress(keyFromMessageId('payments', id), PARTITIONS);
/** Ids shard `shard` of `count` owns, each with its partition, in query order (partition, then RowKey). */
function owned(shard: number, count: number, prefix: string, n: number) {
  return Array.from({ length: 400 }, (_, i) => `${prefix}-${i}`)
    .filter((id) => shardOf(id, count) === shard)
    .slice(0, n)
    .sort((a, b) => (addressOf(a).partitionKey + addressOf(a).rowKey < addressOf(b).partitionKey + addressOf(b).rowKey ? -1 : 1));
}

const options = (extra: Partial<OwnershipCheckOptions> = {}): OwnershipCheckOptions => ({
  layout: { count: 2, index: 0 },
  partitionCount: PARTITIONS,
  nowMs: NOW_MS,
  callTimeoutMs: 10_000,
  ...extra,
});

/** Answers the queries `answer` returns a page for, in place of the service (after the SDK's retries, before its parsing). */
function answerQueries(client: TableClient, answer: (request: PipelineRequest) => { rows: object[]; more: boolean } | undefined) {
  client.pipeline.addPolicy(
    {
      name: `pages-${Math.random()}`,
      sendRequest: async (request, next): Promise<PipelineResponse> => {
        const page = isQuery(request) ? answer(request) : undefined;
        if (!page) return next(request);
        const headers = createHttpHeaders({ 'content-type': 'application/json;odata=nometadata' });
        if (page.more) {
          headers.set('x-ms-continuation-NextPartitionKey', '1!8!cDAwMQ--');
          headers.set('x-ms-continuation-NextRowKey', '1!4!eHh4eA--');
        }
        return { request, status: 200, headers, bodyAsText: JSON.stringify({ value: page.rows }) };
      },
    },
    { afterPhase: 'Retry' },
  );
}

describe('the layout check’s sample of a partition (Azurite)', () => {
  test('empty pages with a continuation are followed, at most 3 requests a partition; a row on the second page is read', async () => {
    const client = await table();
    const [stray] = owned(1, 2, 'moved', 1);
    const row = { PartitionKey: 'p001', RowKey: 'r', idempotencyKey: stray, status: 'COMPLETED', retentionExpiresAtMs: String(NOW_MS + HOUR_MS) };
    const asked = new Map<string, number>();
    const selects = new Set<string | null>();
    answerQueries(client, (request) => {
      selects.add(new URL(request.url).searchParams.get('$select'));
      const partition = partitionOf(request)!;
      const n = (asked.get(partition) ?? 0) + 1;
      asked.set(partition, n);
      if (partition === 'p000') return { rows: [], more: true }; // Azure scanning forever
      if (partition === 'p001') return n === 1 ? { rows: [], more: true } : { rows: [row], more: false };
      return undefined;
    });
    const report = await strayPaymentRecords(client, options());
    expect(Object.fromEntries(asked)).toEqual({ p000: 3, p001: 2, p002: 1, p003: 1 });
    expect(report).toMatchObject({ checked: 1, requests: 7, strays: [{ paymentId: stray, owner: 1 }] });
    // Only the three columns the check reads.
    expect([...selects]).toEqual(['idempotencyKey,status,retentionExpiresAtMs']);
  });

  test('a consumer name with a quote is matched as it is written', async () => {
    const client = await table();
    const key = keyFromMessageId("it's", 'q-1');
    await insertInBatches(client, [
      seedMarkerEntity({ key, status: RecordStatus.Completed, leaseExpiresAtMs: 0, retentionExpiresAtMs: NOW_MS + HOUR_MS, updatedAtMs: NOW_MS }, PARTITIONS),
    ]);
    const found: string[] = [];
    for await (const sample of liveMarkerSample(client, {
      consumer: "it's",
      partitionCount: PARTITIONS,
      nowMs: NOW_MS,
      perPartition: 10,
      callTimeoutMs: 10_000,
    }))
      found.push(...sample.markers.map((m) => m.key));
    expect(found).toEqual(['q-1']);
  });

  test('the query asks the service for live markers only: an expired one first in the partition does not hide a live one', async () => {
    const client = await table();
    const inOne = owned(1, 2, 'gone', 40).filter((id) => addressOf(id).partitionKey === 'p002');
    expect(inOne.length).toBeGreaterThanOrEqual(2);
    const [expired, live] = inOne;
    await seed(client, [expired, live], (id) => id === expired);
    const report = await strayPaymentRecords(client, options({ perPartition: 1 }));
    expect(report.strays.map((s) => s.paymentId)).toEqual([live]);
    expect(report.checked).toBe(1);
  });

  test('a read the service refuses fails the check, named liveMarkerSample (only a missing table reads as empty)', async () => {
    const client = await table();
    client.pipeline.addPolicy({
      name: 'refuse',
      sendRequest: async (request, next) => {
        if (isQuery(request)) throw new RestError('This request is not authorized', { statusCode: 403, code: 'AuthorizationPermissionMismatch', request });
        return next(request);
      },
    });
    const error = await strayPaymentRecords(client, options()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({ operation: 'liveMarkerSample' });
  });

  test('a read past its deadline fails the check as unavailable, named liveMarkerSample', async () => {
    const client = await table();
    client.pipeline.addPolicy({
      name: 'hang',
      sendRequest: async (request, next) => {
        if (!isQuery(request)) return next(request);
        await new Promise((resolve) => request.abortSignal?.addEventListener('abort', resolve));
        throw new RestError('aborted', { code: 'ECONNRESET', request });
      },
    });
    const error = await strayPaymentRecords(client, options({ callTimeoutMs: 200 })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ operation: 'liveMarkerSample' });
  });
});

describe('where the check stops once it has enough strays (Azurite)', () => {
  test('the own check reads no partition after the one that gave the last stray it keeps', async () => {
    const client = await table();
    const strays = owned(1, 2, 'away', 8);
    await seed(client, strays);
    const partitions = strays.map((id) => Number.parseInt(addressOf(id).partitionKey.slice(1), 16));
    const lastNeeded = partitions[1]; // maxStrays 2: the partition of the second stray, in query order
    expect(lastNeeded).toBeLessThan(PARTITIONS - 1); // the premise: partitions are left to skip
    const report = await strayPaymentRecords(client, options({ maxStrays: 2 }));
    expect(report.strays).toHaveLength(2);
    expect(report.requests).toBe(lastNeeded + 1);
  });

  test('the cross check reads no other shard after the one that filled it', async () => {
    const own = await table();
    const first = await table();
    await seed(first, owned(0, 3, 'first', 3));
    const second = await table();
    await seed(second, owned(0, 3, 'second', 3));
    let secondRequests = 0;
    second.pipeline.addPolicy({ name: 'count', sendRequest: (request, next) => (secondRequests++, next(request)) });
    const report = await misplacedPaymentRecords(
      own,
      [
        { shard: 1, client: first },
        { shard: 2, client: second },
      ],
      options({ layout: { count: 3, index: 0 }, maxStrays: 3 }),
    );
    expect(report.strays.map((s) => s.foundOn)).toEqual([1, 1, 1]);
    expect(secondRequests).toBe(0);
  });
});
