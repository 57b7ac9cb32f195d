import {
  claimOf,
  ConfigurationError,
  copyRecord,
  IdempotencyError,
  isKnownStatus,
  isOwnWrite,
  isStillHeldBy,
  LeaseLostError,
  RecordStatus,
  reopenBy,
  sameRowProperties,
  StoreUnavailableError,
  type IdempotencyRecord,
} from 'azure-functions-idempotency/internal';

// The decision rules every store applies (recordRules.ts, record.ts): the parts a store's outcome or error rests on
// that the rules' own unit test (recordRules.test.ts) leaves open.

const DIGEST = 'a'.repeat(64);

function record(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    recordId: 'record-1',
    consumer: 'payments',
    key: 'pay-1',
    status: RecordStatus.Completed,
    digest: DIGEST,
    result: { status: 'failed', reason: 'budget spent' },
    attempt: 3,
    ownerId: 'owner-1',
    leaseExpiresAtMs: 0,
    retentionExpiresAtMs: 10_000,
    createdAtMs: 100,
    updatedAtMs: 200,
    localRows: ['payment'],
    etag: 'W/"7"',
    ...overrides,
  };
}

describe('the record statuses', () => {
  test('the three known statuses are known; anything else, or a non-string, is not', () => {
    expect(Object.values(RecordStatus)).toEqual(['IN_PROGRESS', 'COMPLETED', 'RELEASED']);
    for (const status of ['IN_PROGRESS', 'COMPLETED', 'RELEASED']) expect(isKnownStatus(status)).toBe(true);
    for (const status of ['ARCHIVED', 'completed', '', undefined, null, 1, {}]) expect(isKnownStatus(status)).toBe(false);
  });

  test('a copy of a record is independent: its result and rows can be changed without touching the original', () => {
    const original = record({ result: { nested: { n: 1 } }, localRows: ['a'] });
    const copy = copyRecord(original);
    expect(copy).toEqual(original);
    (copy.result as { nested: { n: number } }).nested.n = 2;
    (copy.localRows as string[]).push('b');
    expect(original.result).toEqual({ nested: { n: 1 } });
    expect(original.localRows).toEqual(['a']);
    expect(copyRecord(record({ result: undefined })).result).toBeUndefined();
    expect('result' in copyRecord(record({ result: undefined }))).toBe(true);
  });
});

describe('own writes and held claims', () => {
  const intended = { ownerId: 'owner-1', attempt: 3, status: RecordStatus.Released, leaseExpiresAtMs: 0, resultJson: undefined, localRows: ['x', 'y'] };

  test('a record without a result matches a write of no result only; rows compare as sets of names', () => {
    const released = record({ status: RecordStatus.Released, result: undefined, localRows: ['y', 'x'] });
    expect(isOwnWrite(released, intended)).toBe(true);
    expect(isOwnWrite(released, { ...intended, resultJson: 'null' })).toBe(false);
    expect(isOwnWrite(record({ status: RecordStatus.Released, result: null, localRows: ['x', 'y'] }), { ...intended, resultJson: 'null' })).toBe(true);
    // Same count, different names; and names whose joined text would agree only unsorted.
    expect(isOwnWrite(released, { ...intended, localRows: ['x', 'z'] })).toBe(false);
    expect(isOwnWrite(record({ status: RecordStatus.Released, result: undefined, localRows: ['b', 'a'] }), { ...intended, localRows: ['a', 'b'] })).toBe(true);
    expect(isOwnWrite(record({ status: RecordStatus.Released, result: undefined, localRows: [] }), { ...intended, localRows: [] })).toBe(true);
  });

  test("a row's stored properties must be exactly the intended ones, by name and value", () => {
    expect(sameRowProperties({}, {})).toBe(true);
    expect(sameRowProperties({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameRowProperties({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameRowProperties({ a: '1' }, { a: 1 })).toBe(false);
  });

  test('a claim is still held only by its own owner and attempt, while in progress', () => {
    const held = { ownerId: 'owner-1', attempt: 3 };
    const inProgress = record({ status: RecordStatus.InProgress, leaseExpiresAtMs: 5_000 });
    expect(isStillHeldBy(inProgress, held)).toBe(true);
    expect(isStillHeldBy({ ...inProgress, ownerId: 'owner-2' }, held)).toBe(false);
    expect(isStillHeldBy({ ...inProgress, attempt: 4 }, held)).toBe(false);
    expect(isStillHeldBy({ ...inProgress, status: RecordStatus.Completed }, held)).toBe(false);
    expect(isStillHeldBy({ ...inProgress, status: RecordStatus.Released }, held)).toBe(false);
  });

  test('the claim a marker stands for carries its key, digest and every field of the record it names', () => {
    const inProgress = record({ status: RecordStatus.InProgress, leaseExpiresAtMs: 5_000 });
    expect(claimOf({ consumer: 'payments', key: 'pay-1' }, 'd'.repeat(64), inProgress)).toEqual({
      key: { consumer: 'payments', key: 'pay-1' },
      recordId: 'record-1',
      digest: 'd'.repeat(64),
      attempt: 3,
      ownerId: 'owner-1',
      leaseExpiresAtMs: 5_000,
      createdAtMs: 100,
      localRows: ['payment'],
      etag: 'W/"7"',
    });
  });
});

describe("reopenBy: a store's reopen through its conditional rewrite", () => {
  test('a rewrite that lands: reopened, with the record it wrote; the cached completion of the scoped key is forgotten', async () => {
    const forgotten: string[] = [];
    const seen: unknown[] = [];
    const written = record({ status: RecordStatus.Released, etag: 'W/"8"', lastError: 'operator retry' });
    const outcome = await reopenBy(
      record(),
      'operator retry',
      1024,
      async (claim, change) => {
        seen.push(claim, change);
        return written;
      },
      (scoped) => forgotten.push(scoped),
    );
    expect(outcome).toEqual({ kind: 'reopened', record: written });
    expect(forgotten).toEqual(['8:payments:pay-1']);
    expect(seen[0]).toMatchObject({ key: { consumer: 'payments', key: 'pay-1' }, attempt: 3, ownerId: 'owner-1', etag: 'W/"7"', digest: DIGEST });
    expect(seen[1]).toEqual({
      status: RecordStatus.Released,
      leaseExpiresAtMs: 0,
      resultJson: '{"status":"failed","reason":"budget spent"}',
      lastError: 'operator retry',
    });
  });

  test('a rewrite refused as a lost lease (the record moved since it was read): changed, and nothing forgotten', async () => {
    const forgotten: string[] = [];
    const outcome = await reopenBy(
      record(),
      'r',
      10,
      () => Promise.reject(new LeaseLostError('8:payments:pay-1', 3, 'reopen')),
      (scoped) => forgotten.push(scoped),
    );
    expect(outcome).toEqual({ kind: 'changed' });
    expect(forgotten).toEqual([]);
  });

  test("any other failure of the rewrite is the caller's error, nothing forgotten", async () => {
    const forgotten: string[] = [];
    const outage = new StoreUnavailableError('store down', 'reopen');
    await expect(
      reopenBy(
        record(),
        'r',
        10,
        () => Promise.reject(outage),
        (scoped) => forgotten.push(scoped),
      ),
    ).rejects.toBe(outage);
    expect(forgotten).toEqual([]);
  });

  test('a record of an invalid key, or one not completed, is refused before any rewrite', async () => {
    const rewrite = jest.fn();
    await expect(reopenBy(record({ consumer: ' payments' }), 'r', 10, rewrite, () => undefined)).rejects.toThrow(/leading or trailing white space/);
    await expect(reopenBy(record({ status: RecordStatus.InProgress }), 'r', 10, rewrite, () => undefined)).rejects.toThrow(
      new ConfigurationError('only a completed record is reopened; this one is IN_PROGRESS'),
    );
    expect(rewrite).not.toHaveBeenCalled();
    await expect(reopenBy(record({ key: '' }), 'r', 10, rewrite, () => undefined)).rejects.toBeInstanceOf(IdempotencyError);
    expect(rewrite).not.toHaveBeenCalled();
  });
});
