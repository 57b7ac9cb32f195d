import { RestError, type TableClient, type TransactionAction } from '@azure/data-tables';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { sweepRewardMarkers } from '../../src/lifecycle/rewardMarkers';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/** A request as the table client's pipeline policies see it. */
type PipelineRequest = Parameters<Parameters<TableClient['pipeline']['addPolicy']>[0]['sendRequest']>[0];

/**
 * Each call of the rewards markers' sweep (src/lifecycle/rewardMarkers.ts) on Azurite, met by a fault or a request
 * that never answers: the run fails with the store error named after that call (what the expiry timer logs), a call
 * past its deadline is aborted (the SDK's request is cancelled, not left running), and a refused delete is never
 * taken for a row already gone. Written for the fourth mutation pass's survivors (docs/mutation.md).
 */
const azuriteOf = useAzurite();
const int64 = (ms: number) => ({ value: String(ms), type: 'Int64' as const });

async function seed(client: TableClient, count: number): Promise<void> {
  for (let i = 0; i < count; i += 100) {
    const actions = Array.from({ length: Math.min(100, count - i) }, (_, j): TransactionAction => [
      'create',
      { partitionKey: 'c-ann', rowKey: `e-${String(i + j).padStart(5, '0')}`, kind: 'reward-event', appliedAtMs: int64(1_000) },
    ]);
    await client.submitTransaction(actions);
  }
}

async function countRows(client: TableClient): Promise<number> {
  let n = 0;
  for await (const row of client.listEntities()) if (row.partitionKey === 'c-ann') n++;
  return n;
}

type Matcher = (request: PipelineRequest) => boolean;
const isCheckpointRead: Matcher = (r) => r.method === 'GET' && r.url.includes("PartitionKey='sweep-state'");
const isCheckpointWrite: Matcher = (r) => r.method === 'PUT' && r.url.includes("PartitionKey='sweep-state'");
const isBatch: Matcher = (r) => r.url.includes('$batch');

/** The matching request never answers; `aborted()` says whether the caller cancelled it. */
function hang(client: TableClient, matches: Matcher): { aborted: () => boolean } {
  let aborted = false;
  client.pipeline.addPolicy({
    name: 'hang',
    sendRequest: async (request, next) => {
      if (!matches(request)) return next(request);
      await new Promise<void>((resolve) => request.abortSignal?.addEventListener('abort', () => resolve()));
      aborted = true;
      throw new RestError('The operation was aborted.', { code: 'REQUEST_ABORTED' });
    },
  });
  return { aborted: () => aborted };
}

/** The matching request is answered by `statusCode` (a RestError as the SDK raises it). */
function refuse(client: TableClient, matches: Matcher, statusCode: number): void {
  client.pipeline.addPolicy({
    name: 'refuse',
    sendRequest: async (request, next) => {
      if (matches(request)) throw new RestError(`injected ${statusCode}`, { statusCode, request });
      return next(request);
    },
  });
}

async function eventually(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  return check();
}

describe('sweepRewardMarkers: each call met by a fault', () => {
  test('a delete refused with 503: the run fails as deleteRewardMarkers unavailable, the rows stay', async () => {
    const table = await freshTable(azuriteOf(), 'rmc');
    await seed(table, 3);
    refuse(table, isBatch, 503);
    const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
    await expect(run).rejects.toThrow(StoreUnavailableError);
    await expect(run).rejects.toMatchObject({ operation: 'deleteRewardMarkers' });
    expect(await countRows(table)).toBe(3);
  });

  test('a delete refused with 403: a request error of deleteRewardMarkers, not a row already gone', async () => {
    const table = await freshTable(azuriteOf(), 'rmc');
    await seed(table, 2);
    refuse(table, isBatch, 403);
    const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock() });
    await expect(run).rejects.toThrow(StoreRequestError);
    await expect(run).rejects.toMatchObject({ operation: 'deleteRewardMarkers', statusCode: 403 });
  });

  test('a checkpoint read that never answers: aborted at its deadline, the run fails as readSweepCheckpoint', async () => {
    const table = await freshTable(azuriteOf(), 'rmc');
    const request = hang(table, isCheckpointRead);
    const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock(), callTimeoutMs: 200 });
    await expect(run).rejects.toThrow(StoreUnavailableError);
    await expect(run).rejects.toMatchObject({ operation: 'readSweepCheckpoint' });
    expect(await eventually(request.aborted)).toBe(true);
  });

  test('a delete that never answers: aborted at its deadline, the run fails as deleteRewardMarkers', async () => {
    const table = await freshTable(azuriteOf(), 'rmc');
    await seed(table, 2);
    const request = hang(table, isBatch);
    const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 60_000, clock: new FakeClock(), callTimeoutMs: 300 });
    await expect(run).rejects.toMatchObject({ operation: 'deleteRewardMarkers', message: expect.stringContaining('deleteRewardMarkers') });
    expect(await eventually(request.aborted)).toBe(true);
  });

  test('a checkpoint write that never answers (a scan of more than one page): aborted, the run fails as writeSweepCheckpoint', async () => {
    const table = await freshTable(azuriteOf(), 'rmc');
    await seed(table, 1001);
    const request = hang(table, isCheckpointWrite);
    const run = sweepRewardMarkers(table, { cutoffMs: 2_000, budgetMs: 600_000, clock: new FakeClock(), callTimeoutMs: 2_000 });
    await expect(run).rejects.toMatchObject({ operation: 'writeSweepCheckpoint', message: expect.stringContaining('writeSweepCheckpoint') });
    expect(await eventually(request.aborted)).toBe(true);
  });
});
