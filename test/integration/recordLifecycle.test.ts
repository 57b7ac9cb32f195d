import type { TableClient } from '@azure/data-tables';
import { RestError } from '@azure/core-rest-pipeline';
import {
  ConfigurationError,
  keyFromMessageId,
  payloadDigest,
  RecordStatus,
  StoreUnavailableError,
  TableIdempotencyStore,
  UnknownRecordStatusError,
  type ClaimOutcome,
  type LocalEffect,
} from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

const DAY_MS = 86_400_000;
const azuriteOf = useAzurite();

async function newStore(): Promise<{ store: TableIdempotencyStore; client: TableClient; clock: FakeClock }> {
  const clock = new FakeClock();
  const client = await freshTable(azuriteOf());
  return { store: new TableIdempotencyStore(client, { retentionMs: 7 * DAY_MS, leaseMs: 60_000, clock }), client, clock };
}

const key = keyFromMessageId('payments', 'pay-edge');
const digest = payloadDigest({ paymentId: 'pay-edge', amount: 100 });
const row = (name: string, n: number): LocalEffect => ({ name, properties: { n } });

function claimOf(outcome: ClaimOutcome) {
  if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

/** RowKeys (after the marker's) of the key's local rows, sorted. */
async function localRowsOf(store: TableIdempotencyStore, client: TableClient): Promise<Record<string, unknown>> {
  const { partitionKey, rowKey } = store.addressOf(key);
  const rows: Record<string, unknown> = {};
  for await (const entity of client.listEntities<{ n?: number }>({ queryOptions: { filter: `PartitionKey eq '${partitionKey}'` } })) {
    if (entity.rowKey!.startsWith(`${rowKey}~`)) rows[entity.rowKey!.slice(rowKey.length + 1)] = entity.n;
  }
  return rows;
}

describe('local rows have the lifecycle of their record', () => {
  test('sweep: an expired record goes with its local rows, and the key is claimed afresh with new rows', async () => {
    const { store, client, clock } = await newStore();
    await store.complete(claimOf(await store.claim(key, digest, { effects: [row('payment', 1), row('audit', 1)] })), 'first');
    clock.advance(7 * DAY_MS + 1);
    const report = await new ExpirySweeper(client, { budgetMs: 60_000, clock }).sweep();
    expect(report).toMatchObject({ deleted: 1, deletedLocalRows: 2 });
    expect(await store.get(key)).toBeUndefined();
    expect(await localRowsOf(store, client)).toEqual({});
    const again = await store.claim(key, digest, { effects: [row('payment', 2)] });
    expect(again).toMatchObject({ kind: 'claimed', claim: { attempt: 1, localRows: ['payment'] } });
    expect(await localRowsOf(store, client)).toEqual({ payment: 2 });
  });

  test('claim: a local row left behind by a removed marker (as older sweeps did) is taken over, not a 409 forever', async () => {
    const { store, client } = await newStore();
    await store.complete(claimOf(await store.claim(key, digest, { effects: [row('payment', 1)] })), 'first');
    const { partitionKey, rowKey } = store.addressOf(key);
    await client.deleteEntity(partitionKey, rowKey); // the marker alone goes, as the sweep did before
    const again = await store.claim(key, digest, { effects: [row('payment', 2)] });
    expect(again.kind).toBe('claimed');
    expect(await localRowsOf(store, client)).toEqual({ payment: 2 });
    expect((await store.commit(keyFromMessageId('payments', 'other'), digest, 'r', [row('payment', 3)])).kind).toBe('committed');
  });

  test("takeover: the previous attempt's rows it does not write again are deleted; the marker lists exactly the rows that exist", async () => {
    const { store, client, clock } = await newStore();
    claimOf(await store.claim(key, digest, { effects: [row('a', 1), row('b', 1)] }));
    clock.advance(60_001);
    const second = claimOf(await store.claim(key, digest, { effects: [row('b', 2), row('c', 2)] }));
    expect(second).toMatchObject({ attempt: 2, localRows: ['b', 'c'] });
    expect(await localRowsOf(store, client)).toEqual({ b: 2, c: 2 });
    const done = await store.complete(second, 'ok', [row('c', 3), row('d', 3)]);
    expect(done.localRows).toEqual(['b', 'c', 'd']);
    expect(await localRowsOf(store, client)).toEqual({ b: 2, c: 3, d: 3 });
    // The sweep removes every one of them with the record.
    clock.advance(7 * DAY_MS + 1);
    expect(await new ExpirySweeper(client, { budgetMs: 60_000, clock }).sweep()).toMatchObject({ deleted: 1, deletedLocalRows: 3 });
    expect(await localRowsOf(store, client)).toEqual({});
  });

  test('takeover: a released claim with rows is taken over by a claim with none, and its rows go', async () => {
    const { store, client } = await newStore();
    await store.release(claimOf(await store.claim(key, digest, { effects: [row('payment', 1)] })), 'failed');
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2, localRows: [] } });
    expect(await localRowsOf(store, client)).toEqual({});
  });

  test('takeover: more local row names across attempts than one transaction holds is a ConfigurationError, nothing written', async () => {
    const { store, clock } = await newStore();
    const names = (prefix: string) => Array.from({ length: 60 }, (_, i) => row(`${prefix}${i}`, i));
    claimOf(await store.claim(key, digest, { effects: names('x') }));
    clock.advance(60_001);
    await expect(store.claim(key, digest, { effects: names('y') })).rejects.toThrow(ConfigurationError);
    expect((await store.get(key))?.attempt).toBe(1);
  });

  test('sweep: records with local rows are packed into transactions of at most batchSize actions', async () => {
    const { store, client, clock } = await newStore();
    for (let i = 0; i < 12; i++) {
      await store.commit(keyFromMessageId('payments', `k${i}`), digest, i, [row('payment', i), row('audit', i)]);
    }
    clock.advance(7 * DAY_MS + 1);
    const report = await new ExpirySweeper(client, { budgetMs: 60_000, clock, partitionCount: 16, batchSize: 4 }).sweep();
    expect(report).toMatchObject({ deleted: 12, deletedLocalRows: 24, skipped: 0 });
    let left = 0;
    for await (const entity of client.listEntities()) if (entity.partitionKey !== 'sweep-state') left++;
    expect(left).toBe(0);
  });
});

describe("generations: a record's lifetime", () => {
  test('the takeover of an expired record starts a new generation; a lapsed lease keeps it', async () => {
    const { store, clock } = await newStore();
    const first = claimOf(await store.claim(key, digest));
    clock.advance(60_001);
    const second = claimOf(await store.claim(key, digest));
    expect(second.createdAtMs).toBe(first.createdAtMs);
    await store.complete(second, 'done');
    clock.advance(7 * DAY_MS + 1);
    const third = claimOf(await store.claim(key, payloadDigest({ paymentId: 'pay-edge', amount: 200 })));
    expect(third.attempt).toBe(3); // fencing numbers never go back while the record exists
    expect(third.createdAtMs).toBe(clock.now);
  });
});

describe('unknown statuses are refused', () => {
  test('claim: a record with a status this version does not know is refused with UnknownRecordStatusError, never taken over', async () => {
    const { store, client, clock } = await newStore();
    const claim = claimOf(await store.claim(key, digest));
    const { partitionKey, rowKey } = store.addressOf(key);
    await client.updateEntity({ partitionKey, rowKey, status: 'ARCHIVED' }, 'Merge');
    const refused = await store.claim(key, digest).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnknownRecordStatusError);
    expect((refused as UnknownRecordStatusError).message).toMatch(/status "ARCHIVED", which this version does not know; refusing to take it over/);
    clock.advance(60_001); // even once the lease it had has lapsed
    await expect(store.claim(key, digest)).rejects.toThrow(UnknownRecordStatusError);
    await expect(store.commit(key, digest, 'again')).rejects.toThrow(UnknownRecordStatusError);
    expect(await store.get(key)).toMatchObject({ status: 'ARCHIVED', attempt: claim.attempt });
  });
});

/** From now on every answer to `method` is lost after the server acted (until `stop`). */
function loseEveryAnswer(client: TableClient, method: string): { stop: () => void; lost: () => number } {
  let armed = true;
  let lost = 0;
  client.pipeline.addPolicy(
    {
      name: `loseEvery${method}`,
      sendRequest: async (request, next) => {
        const response = await next(request);
        if (armed && request.method === method) {
          lost++;
          throw new RestError('socket hang up (answer lost after the server acted)', { code: 'ECONNRESET', request });
        }
        return response;
      },
    },
    { afterPhase: 'Retry' },
  );
  return { stop: () => (armed = false), lost: () => lost };
}

describe('lost answers: a claim whose insert landed while every answer was lost', () => {
  test('claim: when the insert and all its retries lose their answers, a read settles it: the claim is ours', async () => {
    const { store, client } = await newStore();
    const faults = loseEveryAnswer(client, 'POST');
    const outcome = await store.claim(key, digest);
    expect(faults.lost()).toBeGreaterThan(1); // the first try and the SDK's retry
    expect(outcome).toMatchObject({ kind: 'claimed', claim: { attempt: 1 } });
    faults.stop();
    expect((await store.complete(claimOf(outcome), 'ok')).status).toBe(RecordStatus.Completed);
  });

  test('claim: when even the read fails, the error says the claim may have landed, and this store takes it over on its next claim', async () => {
    const { store, client } = await newStore();
    const posts = loseEveryAnswer(client, 'POST');
    const gets = loseEveryAnswer(client, 'GET');
    const failure = await store.claim(key, digest).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect((failure as Error).message).toMatch(/may have been written; if so the key stays in progress until its lease lapses/);
    posts.stop();
    gets.stop();
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.InProgress, attempt: 1 }); // it had landed
    expect(await store.claim(key, digest)).toMatchObject({ kind: 'reclaimed', claim: { attempt: 2 } }); // at once, not "in progress"
  });
});
