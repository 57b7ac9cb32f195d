import { RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import { RecordState, recordState, replayDecision, ReplayAction } from 'azure-functions-idempotency/operator';
// Internal: the console's pure parts, tested without a store.
import { evictPlan, parseDuration as duration, releasePlan, scanPages, serviceBusCopyOf } from 'azure-functions-idempotency/internal';

const NOW = 1_800_000_000_000;
const record = (fields: Partial<IdempotencyRecord>): IdempotencyRecord => ({
  recordId: 'r',
  consumer: 'c',
  key: 'k',
  status: RecordStatus.Completed,
  digest: 'd',
  result: undefined,
  attempt: 1,
  ownerId: 'o',
  leaseExpiresAtMs: 0,
  retentionExpiresAtMs: NOW + 1000,
  createdAtMs: NOW - 1000,
  updatedAtMs: NOW - 1000,
  localRows: [],
  etag: 'e',
  ...fields,
});

describe('scanPages', () => {
  const source = (pages: ReadonlyArray<readonly number[]>) => {
    let requests = 0;
    const read = async (cursor: string | undefined) => {
      requests++;
      const at = cursor === undefined ? 0 : Number(cursor);
      return { items: pages[at], cursor: at + 1 < pages.length ? String(at + 1) : undefined };
    };
    return { read, requests: () => requests };
  };

  test('an empty page with a continuation is not the end: every page is read, each request counted', async () => {
    const s = source([[], [1, 2], [], [], [3], []]);
    const result = await scanPages(s.read, () => true, { limit: 100, maxPages: 100 });
    expect([result.items, result.pages, result.cursor, result.stoppedBy]).toEqual([[1, 2, 3], 6, undefined, undefined]);
  });

  test('maxPages bounds the requests, empty ones included; the cursor resumes there', async () => {
    const s = source([[], [], [], [1], [2]]);
    const first = await scanPages(s.read, () => true, { limit: 100, maxPages: 3 });
    expect([first.items, first.pages, first.stoppedBy]).toEqual([[], 3, 'maxPages']);
    const rest = await scanPages(s.read, () => true, { limit: 100, maxPages: 3, cursor: first.cursor });
    expect(rest.items).toEqual([1, 2]);
  });

  test('a limit reached inside a page resumes after the last item kept, not at the next page', async () => {
    const s = source([
      [1, 2, 3, 4],
      [5, 6],
    ]);
    const odd = (n: number) => n % 2 === 1;
    const first = await scanPages(s.read, odd, { limit: 1, maxPages: 10 });
    const second = await scanPages(s.read, odd, { limit: 1, maxPages: 10, cursor: first.cursor });
    const third = await scanPages(s.read, odd, { limit: 1, maxPages: 10, cursor: second.cursor });
    expect([first.items, second.items, third.items, third.cursor]).toEqual([[1], [3], [5], expect.any(String)]);
    const last = await scanPages(s.read, odd, { limit: 1, maxPages: 10, cursor: third.cursor });
    expect([last.items, last.cursor]).toEqual([[], undefined]);
  });

  test('a cursor it did not print is bad input', async () => {
    await expect(scanPages(source([[1]]).read, () => true, { limit: 1, maxPages: 1, cursor: 'nope' })).rejects.toThrow('--continue: not a cursor');
  });
});

describe('record states and the operator plans', () => {
  test('recordState: live, lapsed, expired, released by an operator or by a failure, unknown; the extension reads failed and held', () => {
    const failedReader = { consumer: 'c', classify: () => 'failed' as const };
    expect(recordState(record({ status: RecordStatus.InProgress, leaseExpiresAtMs: NOW + 1 }), NOW)).toBe(RecordState.InProgress);
    expect(recordState(record({ status: RecordStatus.InProgress, leaseExpiresAtMs: NOW }), NOW)).toBe(RecordState.Lapsed);
    expect(recordState(record({ retentionExpiresAtMs: NOW }), NOW)).toBe(RecordState.Expired);
    expect(recordState(record({ status: RecordStatus.Released, lastError: 'released by operator a at t: x' }), NOW)).toBe(RecordState.Released);
    expect(recordState(record({ status: RecordStatus.Released, lastError: 'TypeError' }), NOW)).toBe(RecordState.Failed);
    expect(recordState(record({ status: 'PAUSED' as RecordStatus }), NOW)).toBe(RecordState.Unknown);
    expect(recordState(record({}), NOW, failedReader)).toBe(RecordState.Failed);
    expect(
      recordState(record({}), NOW, {
        consumer: 'c',
        classify: () => {
          throw new Error('bad extension');
        },
      }),
    ).toBe(RecordState.Completed);
  });

  test('release: refused while leased, work going or unknown; nothing for released or expired; a write otherwise', () => {
    const plan = (r: IdempotencyRecord, work?: string) => releasePlan(r, recordState(r, NOW), NOW, work).kind;
    expect(plan(record({ status: RecordStatus.InProgress, leaseExpiresAtMs: NOW + 1 }))).toBe('refuse');
    expect(plan(record({}), 'a run is going')).toBe('refuse');
    expect(plan(record({ status: 'PAUSED' as RecordStatus }))).toBe('refuse');
    expect(plan(record({ status: RecordStatus.Released }))).toBe('nothing');
    expect(plan(record({ retentionExpiresAtMs: NOW }))).toBe('nothing');
    expect(plan(record({ status: RecordStatus.InProgress, leaseExpiresAtMs: NOW - 1 }))).toBe('write');
    expect(plan(record({}))).toBe('write');
  });

  test('evict: refused while in progress (live or lapsed), work going or unknown, unless forced', () => {
    const lapsed = record({ status: RecordStatus.InProgress, leaseExpiresAtMs: NOW - 1 });
    expect(evictPlan(lapsed, recordState(lapsed, NOW), NOW, undefined, false).kind).toBe('refuse');
    expect(evictPlan(lapsed, recordState(lapsed, NOW), NOW, undefined, true).kind).toBe('write');
    expect(evictPlan(record({}), RecordState.Completed, NOW, 'run', false).kind).toBe('refuse');
    expect(evictPlan(record({}), RecordState.Completed, NOW, undefined, false).kind).toBe('write');
  });
});

describe('replayDecision', () => {
  test('without evidence: completed -> complete; failed/held completed -> release and resend; absent, expired, released -> resend; in progress -> leave', () => {
    expect(replayDecision(undefined, undefined, undefined, undefined)).toEqual({ kind: 'resend' });
    expect(replayDecision(record({}), RecordState.Completed, undefined, undefined)).toEqual({ kind: 'complete' });
    expect(replayDecision(record({}), RecordState.Failed, undefined, undefined)).toEqual({ kind: 'releaseAndResend' });
    expect(replayDecision(record({}), RecordState.Held, undefined, undefined)).toEqual({ kind: 'releaseAndResend' });
    expect(replayDecision(record({ status: RecordStatus.Released }), RecordState.Failed, undefined, undefined)).toEqual({ kind: 'resend' });
    expect(replayDecision(record({}), RecordState.Expired, undefined, undefined)).toEqual({ kind: 'resend' });
    expect(replayDecision(record({}), RecordState.Lapsed, undefined, undefined)).toEqual({ kind: 'leave', action: ReplayAction.LeftInProgress });
    expect(replayDecision(record({}), RecordState.Completed, 'a run', undefined)).toEqual({ kind: 'leave', action: ReplayAction.LeftInProgress });
  });

  test('with evidence of an interrupted replay: a record past its attempt was processed since (never released again); the same attempt is decided as before', () => {
    const evidence = { attempt: 1, status: 'COMPLETED' };
    expect(replayDecision(record({ attempt: 2 }), RecordState.Failed, undefined, evidence)).toEqual({ kind: 'complete' });
    expect(replayDecision(record({ attempt: 1, status: RecordStatus.Released }), RecordState.Released, undefined, evidence)).toEqual({ kind: 'resend' });
    expect(replayDecision(record({ attempt: 1 }), RecordState.Failed, undefined, evidence)).toEqual({ kind: 'releaseAndResend' });
  });
});

test('durations: 45s, 90m, 2h, 1h30m, 7d, 500ms, 0; anything else is bad input', () => {
  expect(['45s', '90m', '2h', '1h30m', '7d', '500ms', '0'].map((text) => duration('d', text))).toEqual([
    45_000, 5_400_000, 7_200_000, 5_400_000, 604_800_000, 500, 0,
  ]);
  for (const bad of ['', '2', 'h', '2 h', '-1h', '2hours', '1h 30m']) expect(() => duration('d', bad)).toThrow('must be a duration');
});

test("the Service Bus copy of a dead-lettered message: same MessageId, body, properties; not the broker's dead-letter reasons", () => {
  const received = {
    messageId: 'pay-1',
    body: Buffer.from('{"paymentId":"pay-1"}'),
    contentType: 'application/json',
    correlationId: 'c-1',
    subject: 'PaymentRequested',
    applicationProperties: { type: 'PaymentRequested', DeadLetterReason: 'MaxDeliveryCountExceeded', DeadLetterErrorDescription: 'x' },
    sequenceNumber: 7,
    deadLetterReason: 'MaxDeliveryCountExceeded',
  };
  const copy = serviceBusCopyOf(received as never);
  expect(copy).toMatchObject({ messageId: 'pay-1', body: received.body, contentType: 'application/json', correlationId: 'c-1', subject: 'PaymentRequested' });
  expect(copy.applicationProperties).toEqual({ type: 'PaymentRequested' });
  expect(copy).not.toHaveProperty('sequenceNumber');
  expect(copy).not.toHaveProperty('deadLetterReason');
});
