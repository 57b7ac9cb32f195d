import { RestError, type TableClient } from '@azure/data-tables';
import { keyFromMessageId, payloadDigest, StoreRequestError, StoreUnavailableError, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { holdRecords } from '../../packages/idempotency/src/stores/table/sweep/heldRecords';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

/**
 * The sweep's hold pass (packages/idempotency/src/stores/table/sweep/heldRecords.ts) on Azurite when its calls fail:
 * a read or an extend refused names its call, an extend that keeps meeting 412 is retried up to five tries and then
 * reported as a record that kept changing. Written for the fourth mutation pass's survivors.
 */
const azuriteOf = useAzurite();
const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const HOLD_MS = 20 * DAY_MS;
const key = keyFromMessageId('payments', 'pay-1');

type Request = Parameters<Parameters<TableClient['pipeline']['addPolicy']>[0]['sendRequest']>[0];

async function setUp() {
  const client = await freshTable(azuriteOf(), 'hold');
  const clock = new FakeClock();
  const store = new TableIdempotencyStore(client, { retentionMs: RETENTION_MS, leaseMs: 60_000, clock });
  const outcome = await store.claim(key, payloadDigest({ i: 1 }));
  if (outcome.kind !== 'claimed') throw new Error('setup');
  await store.complete(outcome.claim, { status: 'succeeded' });
  clock.now += RETENTION_MS - DAY_MS; // one day left: within the hold window
  const hold = () => holdRecords(client, [{ name: 'dlq', heldKeys: async () => [key] }], { partitionCount: 16, holdMs: HOLD_MS, clock });
  return { client, clock, store, hold };
}

/** Answers the first `times` requests that match with `statusCode`. */
function fail(client: TableClient, matches: (r: Request) => boolean, statusCode: number, times = Infinity): { count: () => number } {
  let n = 0;
  client.pipeline.addPolicy({
    name: `fail${statusCode}`,
    sendRequest: async (request, next) => {
      if (matches(request) && n < times) {
        n++;
        throw new RestError(`injected ${statusCode}`, { statusCode, request });
      }
      return next(request);
    },
  });
  return { count: () => n };
}
const isRead = (r: Request) => r.method === 'GET' && r.url.includes('PartitionKey=');
const isMerge = (r: Request) => r.method === 'PATCH' || (r.method as string) === 'MERGE' || r.headers.get('x-http-method') === 'MERGE';

test('a read refused with 503: unavailable during expirySweep.hold.read', async () => {
  const { client, hold } = await setUp();
  fail(client, isRead, 503);
  await expect(hold()).rejects.toThrow(StoreUnavailableError);
  await expect(hold()).rejects.toMatchObject({ operation: 'expirySweep.hold.read' });
});

test('an extend refused with 503: unavailable during expirySweep.hold.extend (not retried as a change, not swallowed)', async () => {
  const { client, hold } = await setUp();
  const refused = fail(client, isMerge, 503);
  await expect(hold()).rejects.toThrow(StoreUnavailableError);
  expect(refused.count()).toBe(1);
  await expect(hold()).rejects.toMatchObject({ operation: 'expirySweep.hold.extend' });
});

test('an extend that meets 412 four times is extended on the fifth try', async () => {
  const { client, clock, store, hold } = await setUp();
  const changed = fail(client, isMerge, 412, 4);
  const { counts } = await hold();
  expect(changed.count()).toBe(4);
  expect(counts).toEqual({ held: 1, heldWithRecord: 1, extended: 1, requests: 10 });
  expect((await store.get(key))?.retentionExpiresAtMs).toBe(clock.now + 2 * HOLD_MS);
});

test('an extend that meets 412 five times: the record kept changing (a request error naming it)', async () => {
  const { client, hold } = await setUp();
  fail(client, isMerge, 412);
  const run = hold();
  await expect(run).rejects.toThrow(StoreRequestError);
  await expect(run).rejects.toMatchObject({
    operation: 'expirySweep.hold.extend',
    statusCode: 412,
    message: expect.stringContaining('kept changing; 5 tries'),
  });
});

test('an extend answered with any other conflict (409: never expected of a merge) fails at once as that answer, not as a change', async () => {
  const { client, hold } = await setUp();
  const answered = fail(client, isMerge, 409);
  const run = hold();
  await expect(run).rejects.toThrow(StoreRequestError);
  await expect(run).rejects.toMatchObject({ operation: 'expirySweep.hold.extend', statusCode: 409 });
  expect(answered.count()).toBe(1);
});
