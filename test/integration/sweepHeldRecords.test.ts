import { InvocationContext } from '@azure/functions';
import {
  keyFromMessageId,
  payloadDigest,
  TableIdempotencyStore,
  type IdempotencyKey,
  StoreRequestError,
  StoreUnavailableError,
} from 'azure-functions-idempotency/internal';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { loadSettings } from '../../src/config/settings';
import { ExpirySweeper, type HeldKeysSource } from 'azure-functions-idempotency/table';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';
import { RestError, type TableClient } from '@azure/data-tables';
import { holdRecords } from '../../packages/idempotency/src/stores/table/sweep/heldRecords';

/**
 * Issue 23, item 6: a record whose message is dead-lettered keeps its outcome until the message is resolved, so a
 * resubmission long after retention is answered from it (a duplicate) instead of being claimed afresh and charged
 * again by a provider that has forgotten the key. On a real Azurite, through the Table store.
 */
const DAY_MS = 86_400_000;
const RETENTION_MS = 30 * DAY_MS;
const HOLD_MS = 20 * DAY_MS;
const azuriteOf = useAzurite();

const keyOf = (i: number): IdempotencyKey => keyFromMessageId('payments', `pay-${i}`);
const digestOf = (i: number): string => payloadDigest({ paymentId: `pay-${i}`, amount: 100 + i });

/** A dead-letter queue as the sweep sees it: the keys of the messages in it, changed by the test. */
class DeadLetterList implements HeldKeysSource {
  readonly name = 'payments dead-letter queue';
  keys: IdempotencyKey[] = [];
  failWith: Error | undefined;
  reads = 0;
  async heldKeys(): Promise<readonly IdempotencyKey[]> {
    this.reads++;
    if (this.failWith) throw this.failWith;
    return this.keys;
  }
}

async function setUp() {
  const client = await freshTable(azuriteOf());
  const clock = new FakeClock();
  const store = new TableIdempotencyStore(client, { retentionMs: RETENTION_MS, leaseMs: 60_000, clock });
  // pay-1 and pay-2 completed (charged), pay-3 claimed and never completed (its delivery crashed after the charge).
  for (const i of [1, 2]) {
    const outcome = await store.claim(keyOf(i), digestOf(i));
    if (outcome.kind !== 'claimed') throw new Error(`setup: ${outcome.kind}`);
    await store.complete(outcome.claim, { status: 'succeeded', chargeId: `ch_${i}` });
  }
  const inProgress = await store.claim(keyOf(3), digestOf(3));
  if (inProgress.kind !== 'claimed') throw new Error('setup: pay-3 not claimed');
  const dlq = new DeadLetterList();
  const sweeper = () => new ExpirySweeper(client, { budgetMs: 60_000, clock, holds: [dlq], holdMs: HOLD_MS });
  return { client, clock, store, dlq, sweeper, claim3: inProgress.claim };
}

describe('the expiry sweep keeps the records of dead-lettered messages (Azurite)', () => {
  test('held records survive retention with their outcome; a resubmission is a duplicate; the others go', async () => {
    const { clock, store, dlq, sweeper, claim3 } = await setUp();
    dlq.keys = [keyOf(1), keyOf(3), keyOf(4)]; // pay-4: a dead-lettered message that never claimed (no record)
    clock.advance(RETENTION_MS + 2 * 60_000);

    const report = await sweeper().sweep();
    expect(report).toMatchObject({ held: 3, heldWithRecord: 2, heldExtended: 2, deleted: 1 });
    expect(await store.get(keyOf(2))).toBeUndefined();
    const held1 = await store.get(keyOf(1));
    expect(held1?.retentionExpiresAtMs).toBe(clock.now + 2 * HOLD_MS);
    expect(held1?.result).toEqual({ status: 'succeeded', chargeId: 'ch_1' });

    // The operator resubmits pay-1 a week later: answered from its record, never claimed afresh.
    clock.advance(7 * DAY_MS);
    const again = await store.claim(keyOf(1), digestOf(1));
    expect(again.kind).toBe('duplicate');
    expect(again.kind === 'duplicate' && again.record.result).toEqual({ status: 'succeeded', chargeId: 'ch_1' });
    // pay-3 (in progress, lease long lapsed): the resubmission takes the same lifetime over (attempt 2, same
    // generation), so its charge entity is the one that already holds the provider's answer.
    const takeover = await store.claim(keyOf(3), digestOf(3));
    expect(takeover.kind).toBe('reclaimed');
    expect(takeover.kind === 'reclaimed' && takeover.claim.attempt).toBe(2);
    expect(takeover.kind === 'reclaimed' && takeover.claim.createdAtMs).toBe(claim3.createdAtMs);
  });

  test('a held record is written once per hold window, not on every run; once resolved it expires like any other', async () => {
    const { clock, store, dlq, sweeper } = await setUp();
    dlq.keys = [keyOf(1)];
    clock.advance(RETENTION_MS + 60_000);
    expect((await sweeper().sweep()).heldExtended).toBe(1);
    clock.advance(DAY_MS);
    const second = await sweeper().sweep();
    expect(second).toMatchObject({ held: 1, heldWithRecord: 1, heldExtended: 0, deleted: 0 });

    // Resolved (resubmitted and completed, or deleted by the operator): no longer listed. It keeps the retention the
    // hold gave it (2 x HOLD_MS from the extension), enough for a resubmitted copy's deliveries, then goes.
    dlq.keys = [];
    clock.advance(HOLD_MS);
    expect((await sweeper().sweep()).deleted).toBe(0);
    expect(await store.get(keyOf(1))).toBeDefined();
    clock.advance(HOLD_MS);
    expect((await sweeper().sweep()).deleted).toBe(1);
    expect(await store.get(keyOf(1))).toBeUndefined();
  });

  test('a dead-letter queue that cannot be read fails the run before anything is deleted', async () => {
    const { clock, store, dlq, sweeper } = await setUp();
    clock.advance(RETENTION_MS + 2 * 60_000);
    dlq.failWith = new Error('dead-letter queue unreachable');
    await expect(sweeper().sweep()).rejects.toThrow('dead-letter queue unreachable');
    for (const i of [1, 2, 3]) expect(await store.get(keyOf(i))).toBeDefined();
    dlq.failWith = undefined;
    expect((await sweeper().sweep()).deleted).toBe(3);
  });

  test('without the hold (the sweep before item 6) the same resubmission is claimed afresh: the defect this guards against', async () => {
    const { client, clock, store } = await setUp();
    clock.advance(RETENTION_MS + 2 * 60_000);
    await new ExpirySweeper(client, { budgetMs: 60_000, clock }).sweep();
    const again = await store.claim(keyOf(1), digestOf(1));
    expect(again.kind).toBe('claimed'); // a new lifetime: a new charge entity, and a new provider call
  });

  test('the expiry timer passes its holds to the sweep with the redelivery window as holdMs, and logs what it held', async () => {
    const { client, clock, store, dlq } = await setUp();
    dlq.keys = [keyOf(1)];
    clock.advance(RETENTION_MS + 2 * 60_000);
    const logs: string[] = [];
    const context = new InvocationContext({ invocationId: 'i1', functionName: 'expiryTimer', logHandler: (_level, ...args) => logs.push(args.join(' ')) });
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, IDEMPOTENCY_TABLE_NAME: client.tableName });
    const handler = expiryTimerFromSettings(settings, { clock, holds: [dlq] });
    await handler({ isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } }, context);
    expect(logs.join('\n')).toMatch(/expiry sweep: held 1 \(1 with a record, 1 extended\), scanned 2, deleted 2/);
    // Default settings: TTL 14 d + 10 x (60 s + 300 s) + margin 14 d = 28 d 1 h; the record now lives 2 x that.
    expect((await store.get(keyOf(1)))?.retentionExpiresAtMs).toBe(clock.now + 2 * (28 * DAY_MS + 3_600_000));
    expect(await store.get(keyOf(2))).toBeUndefined();
  });

  test('without Service Bus settings the timer holds nothing and says so on every run', async () => {
    const { client, clock } = await setUp();
    const logs: string[] = [];
    const context = new InvocationContext({
      invocationId: 'i2',
      functionName: 'expiryTimer',
      logHandler: (level, ...args) => logs.push(`${level} ${args.join(' ')}`),
    });
    const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, IDEMPOTENCY_TABLE_NAME: client.tableName });
    await expiryTimerFromSettings(settings, { clock })(
      { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } },
      context,
    );
    expect(logs.join('\n')).toMatch(/warning expiry sweep: no dead-letter queue to hold records for/);
  });

  test('DLQ_RESUBMIT_MARGIN_DAYS = 0: the timer still holds, and warns on every run that resubmissions are not covered', async () => {
    const { client, clock, store, dlq } = await setUp();
    dlq.keys = [keyOf(1)];
    clock.advance(RETENTION_MS + 2 * 60_000);
    const logs: string[] = [];
    const context = new InvocationContext({
      invocationId: 'i3',
      functionName: 'expiryTimer',
      logHandler: (level, ...args) => logs.push(`${level} ${args.join(' ')}`),
    });
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
      IDEMPOTENCY_TABLE_NAME: client.tableName,
      DLQ_RESUBMIT_MARGIN_DAYS: '0',
      EXPIRY_TIMER_SCHEDULE: '0 0 0 1 * *',
    });
    await expiryTimerFromSettings(settings, { clock, holds: [dlq] })(
      { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } },
      context,
    );
    expect(logs.join('\n')).toMatch(/warning expiry sweep: DLQ_RESUBMIT_MARGIN_DAYS is 0: resubmissions of dead-lettered messages are not covered/);
    // The hold: the redelivery window without a margin (TTL 14 d + 10 x (60 s + 300 s) = 14 d 1 h), twice from now.
    expect((await store.get(keyOf(1)))?.retentionExpiresAtMs).toBe(clock.now + 2 * (14 * DAY_MS + 3_600_000));
  });

  test('holds need a hold window', () => {
    const client = { tableName: 'x' } as never;
    expect(() => new ExpirySweeper(client, { budgetMs: 1_000, holds: [new DeadLetterList()] })).toThrow(/holdMs/);
  });
});

/**
 * The sweep's hold pass (packages/idempotency/src/stores/table/sweep/heldRecords.ts) on Azurite when its calls fail:
 * a read or an extend refused names its call, an extend that keeps meeting 412 is retried up to five tries and then
 * reported as a record that kept changing.
 */
describe('the hold pass: each call refused, or meeting a conflict (Azurite)', () => {
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
});
