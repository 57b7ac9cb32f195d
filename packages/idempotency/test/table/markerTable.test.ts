import { RestError, type PipelineRequest } from '@azure/core-rest-pipeline';
import { keyFromMessageId, payloadDigest, StoreRequestError, StoreUnavailableError, type IdempotencyKey } from 'azure-functions-idempotency/internal';
import { useAzurite } from '../../../../test/support/azurite';
import { claimOf, countRequests, failureOf, onRequests, storeOn } from './tableFaults';

/**
 * The Table store's calls to the service on Azurite (MarkerTable.ts): the batch claims' re-read in queries of at most
 * 15 comparisons, each call aborted at its deadline (not left running behind the error), and the operation each error
 * names.
 */
const azuriteOf = useAzurite();
const digest = payloadDigest({ event: 'm' });
let n = 0;
const keys = (count: number): IdempotencyKey[] => Array.from({ length: count }, () => keyFromMessageId('events', `t-${++n}`));
const isBatch = (request: PipelineRequest) => request.method === 'POST' && request.url.includes('$batch');
const isQuery = (request: PipelineRequest) => request.method === 'GET' && /[?&](%24|\$)filter=/.test(request.url);

/** Holds every request `select` picks until the caller's deadline aborts it; records whether it was aborted. */
function hangUntilAborted(select: (request: PipelineRequest) => boolean) {
  const seen = { held: 0, aborted: 0 };
  const policy = async (request: PipelineRequest) => {
    if (!select(request)) return;
    seen.held++;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 3_000);
      request.abortSignal?.addEventListener('abort', () => {
        seen.aborted++;
        clearTimeout(timer);
        resolve();
      });
    });
    throw new RestError('held until aborted', { code: 'ECONNRESET', request });
  };
  return { seen, policy };
}

describe('MarkerTable on Azurite', () => {
  test('a batch claim that finds records reads them back in queries of at most 15 comparisons: 15 keys, 2 queries', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1 });
    const batch = keys(15);
    claimOf(await store.claim(batch[0], digest));
    const filters: string[] = [];
    onRequests(client, { before: (request) => void (isQuery(request) && filters.push(new URL(request.url).searchParams.get('$filter') ?? '')) });
    const requests = countRequests(client);
    const outcomes = await store.claimMany(batch.map((key) => ({ key, digest })));
    expect(outcomes.map((o) => o.kind)).toEqual(['inProgress', ...batch.slice(1).map(() => 'claimed')]);
    expect(filters.map((f) => f.split(' eq ').length - 1)).toEqual([15, 2]);
    // The refused transaction, the 2 queries, one transaction of the 14 found absent.
    expect(requests.total()).toBe(4);
    // 14 keys: one query (PartitionKey and 14 RowKeys), nothing more.
    const fourteen = keys(14);
    claimOf(await store.claim(fourteen[0], digest));
    filters.length = 0;
    await store.claimMany(fourteen.map((key) => ({ key, digest })));
    expect(filters.map((f) => f.split(' eq ').length - 1)).toEqual([15]);
  });

  test('a batch claim past its deadline: the transaction is aborted, not left running', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1, callTimeoutMs: 200 });
    const hang = hangUntilAborted(isBatch);
    onRequests(client, { before: hang.policy }, true);
    const error = await failureOf(store.claimMany(keys(2).map((key) => ({ key, digest }))));
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(hang.seen).toEqual({ held: 1, aborted: 1 });
  });

  test('a batch claim’s re-read past its deadline is aborted and named readMany; refused by the service, named readMany too', async () => {
    const { store, client } = await storeOn(azuriteOf(), { partitionCount: 1, callTimeoutMs: 200 });
    const [taken, fresh] = keys(2);
    claimOf(await store.claim(taken, digest));
    const hang = hangUntilAborted(isQuery);
    let mode: 'hang' | 'refuse' = 'hang';
    onRequests(
      client,
      {
        before: async (request) => {
          if (mode === 'hang') return hang.policy(request);
          if (isQuery(request)) throw new RestError('forbidden', { statusCode: 403, code: 'AuthorizationFailure', request });
        },
      },
      true,
    );
    const late = await failureOf(store.claimMany([taken, fresh].map((key) => ({ key, digest }))));
    expect(late).toMatchObject({ name: 'StoreUnavailableError', operation: 'readMany' });
    expect(hang.seen).toEqual({ held: 1, aborted: 1 });
    mode = 'refuse';
    const refused = await failureOf(store.claimMany([taken, fresh].map((key) => ({ key, digest }))));
    expect(refused).toBeInstanceOf(StoreRequestError);
    expect(refused).toMatchObject({ operation: 'readMany' });
  });

  test('a point read the service refuses fails with the store’s error naming read; a missing record is undefined', async () => {
    const { store, client } = await storeOn(azuriteOf());
    const [key] = keys(1);
    expect(await store.get(key)).toBeUndefined();
    onRequests(
      client,
      {
        before: (request) => {
          if (request.method === 'GET') throw new RestError('forbidden', { statusCode: 403, code: 'AuthorizationFailure', request });
        },
      },
      true,
    );
    const error = await failureOf(store.get(key));
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({ operation: 'read' });
  });

  test('ensureTable: refused by the service or past its deadline, the error names createTable; an existing table is fine', async () => {
    const { store, client } = await storeOn(azuriteOf(), { callTimeoutMs: 200 });
    const requests = countRequests(client);
    await store.ensureTable();
    expect(requests.total()).toBe(1);
    let mode: 'refuse' | 'hang' = 'refuse';
    const hang = hangUntilAborted(() => true);
    onRequests(
      client,
      {
        before: async (request) => {
          if (mode === 'hang') return hang.policy(request);
          throw new RestError('forbidden', { statusCode: 403, code: 'AuthorizationFailure', request });
        },
      },
      true,
    );
    expect(await failureOf(store.ensureTable())).toMatchObject({ name: 'StoreRequestError', operation: 'createTable' });
    mode = 'hang';
    expect(await failureOf(store.ensureTable())).toMatchObject({ name: 'StoreUnavailableError', operation: 'createTable' });
    expect(hang.seen).toEqual({ held: 1, aborted: 1 });
  });
});
