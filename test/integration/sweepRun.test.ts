import { RestError, type PipelineRequest } from '@azure/core-rest-pipeline';
import { TableClient } from '@azure/data-tables';
import {
  keyFromMessageId,
  payloadDigest,
  StoreRequestError,
  StoreUnavailableError,
  SWEEP_STATE_PARTITION,
  TableIdempotencyStore,
  toNumber,
  type Clock,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { ExpirySweeper, type HeldKeysSource } from 'azure-functions-idempotency/table';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * One expiry sweep run on a real Azurite (packages/idempotency/src/stores/table/sweep/ExpirySweeper.ts,
 * sweepCheckpoint.ts, heldRecords.ts): its summary line, its checkpoint row, its time budget and its hold pass, as
 * an operator reads them. Failures and races are made from a pipeline policy of the sweep's client, with a second
 * client for another process.
 */
const HOUR_MS = 3_600_000;
const azuriteOf = useAzurite();
const keyOf = (id: string): IdempotencyKey => keyFromMessageId('orders', id);
const digestOf = (id: string): string => payloadDigest({ id });

/** A clock that moves `stepMs` forward on every reading. */
class SteppingClock implements Clock {
  constructor(
    public now: number,
    private readonly stepMs: number,
  ) {}
  nowMs(): number {
    const now = this.now;
    this.now += this.stepMs;
    return now;
  }
}

async function setUp(partitionCount = 1) {
  const client = await freshTable(azuriteOf());
  const other = TableClient.fromConnectionString(azuriteOf().connectionString, client.tableName, { allowInsecureConnection: true });
  const clock = new FakeClock();
  const store = new TableIdempotencyStore(client, { retentionMs: HOUR_MS, leaseMs: 60_000, partitionCount, clock });
  const completed = async (id: string, effects = false): Promise<void> => {
    const outcome = await store.claim(keyOf(id), digestOf(id));
    if (outcome.kind !== 'claimed') throw new Error(`setup: ${outcome.kind}`);
    await store.complete(outcome.claim, { id }, effects ? [{ name: 'ledger', properties: { n: 1 } }] : undefined);
  };
  return { client, other, clock, store, completed };
}

/** Runs `before(request, n)` ahead of each request of `client` that `when` selects. */
function before(client: TableClient, when: (request: PipelineRequest) => boolean, run: (request: PipelineRequest, n: number) => Promise<void>): void {
  let n = 0;
  client.pipeline.addPolicy({
    name: `before${Math.random()}`,
    sendRequest: async (request, next) => {
      if (when(request)) await run(request, ++n);
      return next(request);
    },
  });
}
const isMerge = (rowKey: string) => (r: PipelineRequest) => r.method !== 'GET' && r.method !== 'DELETE' && r.url.includes(rowKey) && !r.url.includes('$batch');

describe('a sweep run’s summary line and checkpoint (Azurite)', () => {
  test('a full cycle: every count, the requests, the partitions, and where the next run starts', async () => {
    const { client, clock, completed, store } = await setUp(2);
    await completed('a', true);
    await completed('b');
    const leased = new TableIdempotencyStore(client, { retentionMs: HOUR_MS, leaseMs: 10 * HOUR_MS, partitionCount: 2, clock });
    expect((await leased.claim(keyOf('running'), digestOf('running'))).kind).toBe('claimed');
    clock.advance(2 * HOUR_MS);
    const logs: string[] = [];
    const report = await new ExpirySweeper(client, { partitionCount: 2, budgetMs: 60_000, clock, log: (l) => logs.push(l) }).sweep();
    expect(report).toMatchObject({ scanned: 3, deleted: 2, deletedLocalRows: 1, skippedLeased: 1, partitionsCompleted: 2, stoppedByBudget: false });
    expect(logs).toEqual([
      `expiry sweep: scanned 3, deleted 2, skipped 1 (leased 1, held 0, changed 0, already deleted 0), 1 local rows deleted with them, ` +
        `${report.requests} requests, 2/2 partitions, cycle done, next p000`,
    ]);
    expect(await store.get(keyOf('running'))).toBeDefined();
    // The checkpoint row: its kind, the position and the run's time.
    expect(await client.getEntity(SWEEP_STATE_PARTITION, 'expiry')).toMatchObject({ kind: 'sweep-checkpoint', partitionIndex: 0, afterRowKey: '' });
    expect(toNumber((await client.getEntity(SWEEP_STATE_PARTITION, 'expiry')).updatedAtMs)).toBe(clock.now);
  });

  test('a run out of time stops after its first chunk (every run makes progress), at its deadline, and says where it stopped', async () => {
    const { client, clock, completed } = await setUp(1);
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) await completed(id);
    clock.advance(2 * HOUR_MS);
    const logs: string[] = [];
    // Every reading of the clock is 1 s later; the first reading is the start.
    const run = (budgetMs: number) =>
      new ExpirySweeper(client, { partitionCount: 1, budgetMs, batchSize: 1, clock: new SteppingClock(clock.now, 1_000), log: (l) => logs.push(l) }).sweep();
    const report = await run(1);
    expect(report).toMatchObject({ deleted: 1, stoppedByBudget: true, partitionsCompleted: 0, next: { partitionIndex: 0 }, checkpointSaved: true });
    expect(report.next.afterRowKey).toEqual(expect.any(String));
    expect(logs[0]).toMatch(/, 0\/1 partitions, stopped on budget, next p000 \(mid-partition\)$/);
    expect(await client.getEntity(SWEEP_STATE_PARTITION, 'expiry')).toMatchObject({ partitionIndex: 0, afterRowKey: report.next.afterRowKey });
    // The second chunk's reading is 1 s after the start: at a deadline of 1 s it stops there, before it 2 chunks go.
    expect(await run(1_000)).toMatchObject({ deleted: 1, stoppedByBudget: true });
    expect(await run(1_001)).toMatchObject({ deleted: 2, stoppedByBudget: true });
    expect(await run(60_000)).toMatchObject({ deleted: 3, stoppedByBudget: false, partitionsCompleted: 1 });
  });

  test('the checkpoint’s partition is read modulo the partitions, anything else starts at p000; the row is the one named', async () => {
    const { client, clock, completed } = await setUp(2);
    await completed('a');
    clock.advance(2 * HOUR_MS);
    const runFrom = async (partitionIndex: unknown) => {
      await client.upsertEntity(
        { partitionKey: SWEEP_STATE_PARTITION, rowKey: 'expiry', kind: 'sweep-checkpoint', partitionIndex, afterRowKey: '' },
        'Replace',
      );
      const logs: string[] = [];
      await new ExpirySweeper(client, { partitionCount: 2, budgetMs: 60_000, clock, log: (l) => logs.push(l) }).sweep();
      return logs[0].slice(logs[0].lastIndexOf('next '));
    };
    expect(await runFrom(5)).toBe('next p001'); // a full cycle ends where it started
    expect(await runFrom(1)).toBe('next p001');
    expect(await runFrom(-1)).toBe('next p000');
    expect(await runFrom(1.5)).toBe('next p000');
    expect(await runFrom('x')).toBe('next p000');
    const named = await new ExpirySweeper(client, { partitionCount: 2, budgetMs: 60_000, clock, checkpointName: 'orders' }).sweep();
    expect(named.checkpointSaved).toBe(true);
    expect(await client.getEntity(SWEEP_STATE_PARTITION, 'orders')).toMatchObject({ kind: 'sweep-checkpoint' });
  });

  test('a run that finds the checkpoint moved by an overlapping run keeps it, and says so', async () => {
    const { client, other, clock, completed } = await setUp(1);
    for (const id of ['a', 'b']) await completed(id);
    clock.advance(2 * HOUR_MS);
    before(
      client,
      (r) => r.url.includes('$batch'),
      async (_r, n) => {
        if (n === 1) await new ExpirySweeper(other, { partitionCount: 1, budgetMs: 60_000, clock }).sweep();
      },
    );
    const logs: string[] = [];
    const report = await new ExpirySweeper(client, { partitionCount: 1, budgetMs: 60_000, clock, log: (l) => logs.push(l) }).sweep();
    expect(report).toMatchObject({ deleted: 0, alreadyDeleted: 2, checkpointSaved: false });
    expect(logs[0]).toMatch(/already deleted 2\), .*, cycle done, next p000, checkpoint kept by an overlapping run$/);
  });

  test('a checkpoint that cannot be read or written fails the run with the store’s error, named for the step', async () => {
    const { client } = await setUp(1);
    const failing = (method: string, error: RestError) =>
      before(
        client,
        (r) => r.method === method && r.url.includes(SWEEP_STATE_PARTITION),
        async () => {
          throw error;
        },
      );
    failing('GET', new RestError('busy', { statusCode: 503 }));
    const read = await new ExpirySweeper(client, { partitionCount: 1, budgetMs: 60_000 }).sweep().catch((e: unknown) => e);
    expect(read).toBeInstanceOf(StoreUnavailableError);
    expect(read).toMatchObject({ operation: 'expirySweep.readCheckpoint' });

    const { client: second } = await setUp(1);
    before(
      second,
      (r) => r.method === 'GET' && r.url.includes(SWEEP_STATE_PARTITION),
      async () => {
        throw new RestError('precondition', { statusCode: 412 });
      },
    );
    const conflict = await new ExpirySweeper(second, { partitionCount: 1, budgetMs: 60_000 }).sweep().catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(StoreRequestError);
    expect(conflict).toMatchObject({ message: 'unexpected conflict answer to a checkpoint read', operation: 'expirySweep.readCheckpoint' });

    const { client: third } = await setUp(1);
    before(
      third,
      (r) => r.method === 'POST' && !r.url.includes('$batch') && String(r.body).includes(SWEEP_STATE_PARTITION),
      async () => {
        throw new RestError('busy', { statusCode: 503 });
      },
    );
    const write = await new ExpirySweeper(third, { partitionCount: 1, budgetMs: 60_000 }).sweep().catch((e: unknown) => e);
    expect(write).toBeInstanceOf(StoreUnavailableError);
    expect(write).toMatchObject({ operation: 'expirySweep.writeCheckpoint' });
  });
});

describe('the hold pass (Azurite)', () => {
  const HOLD_MS = 10 * HOUR_MS;
  const source = (ids: string[]): HeldKeysSource => ({ name: 'orders dead-letter queue', heldKeys: async () => ids.map(keyOf) });

  test('a held record that changes before its extension is read again and extended; a key listed twice counts once', async () => {
    const { client, other, clock, store, completed } = await setUp(1);
    await completed('held');
    clock.advance(2 * HOUR_MS);
    const { rowKey, partitionKey } = store.addressOf(keyOf('held'));
    before(client, isMerge(rowKey), async (_r, n) => {
      if (n === 1) await other.updateEntity({ partitionKey, rowKey, touched: 1 }, 'Merge');
    });
    const report = await new ExpirySweeper(client, {
      partitionCount: 1,
      budgetMs: 60_000,
      clock,
      holds: [source(['held', 'held']), source(['held'])],
      holdMs: HOLD_MS,
    }).sweep();
    expect(report).toMatchObject({ held: 1, heldWithRecord: 1, heldExtended: 1, deleted: 0, skippedHeld: 0 });
    // read, refused extension, read again, extension; then checkpoint read, query, checkpoint write
    expect(report.requests).toBe(4 + 3);
    expect((await store.get(keyOf('held')))?.retentionExpiresAtMs).toBe(clock.now + 2 * HOLD_MS);
  });

  test('a held record that keeps changing fails the run after 5 tries, naming it; nothing is deleted', async () => {
    const { client, other, clock, store, completed } = await setUp(1);
    await completed('held');
    await completed('old');
    clock.advance(2 * HOUR_MS);
    const { rowKey, partitionKey } = store.addressOf(keyOf('held'));
    before(client, isMerge(rowKey), async (_r, n) => {
      await other.updateEntity({ partitionKey, rowKey, touched: n }, 'Merge');
    });
    const error = await new ExpirySweeper(client, { partitionCount: 1, budgetMs: 60_000, clock, holds: [source(['held'])], holdMs: HOLD_MS })
      .sweep()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({
      message: `expiry sweep: the held record ${partitionKey}/${rowKey} kept changing; 5 tries to extend its retention failed`,
      operation: 'expirySweep.hold.extend',
      statusCode: 412,
    });
    expect(await store.get(keyOf('old'))).toBeDefined();
  });

  test('a held record deleted before its extension is left gone; one with exactly the hold window left is not written', async () => {
    const { client, other, clock, store, completed } = await setUp(1);
    await completed('gone');
    clock.advance(HOUR_MS / 2);
    await completed('edge');
    const gone = store.addressOf(keyOf('gone'));
    before(client, isMerge(gone.rowKey), async () => {
      await other.deleteEntity(gone.partitionKey, gone.rowKey);
    });
    const edge = (await store.get(keyOf('edge')))!;
    // 'edge' has exactly HOLD_MS of retention left: kept as it is. 'gone' (half an hour older) is to be extended.
    clock.now = edge.retentionExpiresAtMs - HOLD_MS;
    const holdMs = HOLD_MS;
    const report = await new ExpirySweeper(client, { partitionCount: 1, budgetMs: 60_000, clock, holds: [source(['gone', 'edge'])], holdMs }).sweep();
    expect(report).toMatchObject({ held: 2, heldWithRecord: 2, heldExtended: 0, deleted: 0 });
    expect(await store.get(keyOf('gone'))).toBeUndefined();
    expect((await store.get(keyOf('edge')))?.retentionExpiresAtMs).toBe(edge.retentionExpiresAtMs);
    clock.advance(1);
    const later = await new ExpirySweeper(client, { partitionCount: 1, budgetMs: 60_000, clock, holds: [source(['edge'])], holdMs }).sweep();
    expect(later.heldExtended).toBe(1);
  });
});
