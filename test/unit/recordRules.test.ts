import {
  cachedDecision,
  decideClaim,
  generationAfterTakeover,
  hasValidLease,
  isExpired,
  isOwnWrite,
  reopening,
  sameRowProperties,
  storedRowProperties,
  RecordStatus,
  UnknownRecordStatusError,
  ConfigurationError,
  type IdempotencyRecord,
  claimOf,
  copyRecord,
  IdempotencyError,
  isKnownStatus,
  isStillHeldBy,
  LeaseLostError,
  reopenBy,
  StoreUnavailableError,
} from 'azure-functions-idempotency/internal';

const DIGEST = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const LEASE_END = 1_000;
const RETENTION_END = 10_000;

function record(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    recordId: 'record-1',
    consumer: 'payments',
    key: 'pay-1',
    status: RecordStatus.InProgress,
    digest: DIGEST,
    result: undefined,
    attempt: 1,
    ownerId: 'owner-1',
    leaseExpiresAtMs: LEASE_END,
    retentionExpiresAtMs: RETENTION_END,
    createdAtMs: 100,
    updatedAtMs: 100,
    localRows: [],
    etag: 'W/"1"',
    ...overrides,
  };
}

const decide = (r: IdempotencyRecord, nowMs: number, digest = DIGEST) => decideClaim(r, digest, nowMs, '8:payments:pay-1');

describe('record rules: leases', () => {
  test('lease: held before its end, lapsed exactly at leaseExpiresAtMs', () => {
    expect(hasValidLease(record(), LEASE_END - 1)).toBe(true);
    expect(hasValidLease(record(), LEASE_END)).toBe(false);
    expect(hasValidLease(record(), LEASE_END + 1)).toBe(false);
  });

  test('lease: only an in-progress record holds one, whatever its lease time says', () => {
    expect(hasValidLease(record({ status: RecordStatus.Completed }), 0)).toBe(false);
    expect(hasValidLease(record({ status: RecordStatus.Released }), 0)).toBe(false);
  });
});

describe('record rules: expiry', () => {
  test('expiry: not before retentionExpiresAtMs, expired exactly at it', () => {
    const completed = record({ status: RecordStatus.Completed, leaseExpiresAtMs: 0 });
    expect(isExpired(completed, RETENTION_END - 1)).toBe(false);
    expect(isExpired(completed, RETENTION_END)).toBe(true);
  });

  test('expiry: a record under a valid lease past retention is not expired', () => {
    const leased = record({ leaseExpiresAtMs: RETENTION_END + 5 });
    expect(isExpired(leased, RETENTION_END)).toBe(false);
    expect(isExpired(leased, RETENTION_END + 5)).toBe(true);
  });
});

describe('record rules: the claim decision', () => {
  test('claim decision: a valid lease with the same digest is in progress', () => {
    expect(decide(record(), LEASE_END - 1)).toBe('inProgress');
  });

  test('claim decision: exactly at lease expiry the record is taken over', () => {
    expect(decide(record(), LEASE_END)).toBe('takeover');
  });

  test('claim decision: a released record is taken over at once, even inside its old lease time', () => {
    expect(decide(record({ status: RecordStatus.Released, leaseExpiresAtMs: 0 }), 1)).toBe('takeover');
    expect(decide(record({ status: RecordStatus.Released, leaseExpiresAtMs: LEASE_END }), LEASE_END - 1)).toBe('takeover');
  });

  test('claim decision: a completed record with the same digest is a duplicate', () => {
    expect(decide(record({ status: RecordStatus.Completed, leaseExpiresAtMs: 0 }), 5_000)).toBe('duplicate');
  });

  test('claim decision: another digest is key reuse, whatever the status, until retention ends', () => {
    for (const status of Object.values(RecordStatus)) {
      expect(decide(record({ status, leaseExpiresAtMs: status === RecordStatus.InProgress ? LEASE_END : 0 }), 500, OTHER)).toBe('keyReused');
      expect(decide(record({ status, leaseExpiresAtMs: 0 }), RETENTION_END - 1, OTHER)).toBe('keyReused');
    }
  });

  test('claim decision: exactly at retention the record has expired (a new lifetime), for any digest', () => {
    const completed = record({ status: RecordStatus.Completed, leaseExpiresAtMs: 0 });
    expect(decide(completed, RETENTION_END - 1)).toBe('duplicate');
    expect(decide(completed, RETENTION_END)).toBe('expired');
    expect(decide(completed, RETENTION_END, OTHER)).toBe('expired');
  });

  test('claim decision: an unknown status is refused with UnknownRecordStatusError (retryable), never taken over', () => {
    const unknown = record({ status: 'ARCHIVED' as RecordStatus, leaseExpiresAtMs: 0 });
    expect(() => decide(unknown, 5_000)).toThrow(UnknownRecordStatusError);
    expect(() => decide(unknown, 5_000, OTHER)).toThrow(UnknownRecordStatusError);
    try {
      decide(unknown, 5_000);
    } catch (error) {
      expect((error as UnknownRecordStatusError).retryable).toBe(true);
      expect((error as UnknownRecordStatusError).status).toBe('ARCHIVED');
    }
  });

  test('claim decision: an unknown status past retention has expired like any record', () => {
    expect(decide(record({ status: 'ARCHIVED' as RecordStatus, leaseExpiresAtMs: 0 }), RETENTION_END)).toBe('expired');
  });
});

describe('record rules: generations, cache, own writes', () => {
  test("generation: the takeover of an expired record starts a new one; any other keeps the record's", () => {
    expect(generationAfterTakeover('expired', record(), 20_000)).toBe(20_000);
    expect(generationAfterTakeover('takeover', record(), 20_000)).toBe(100);
  });

  test('cache: a cached completed record answers duplicate for its digest, keyReused for another', () => {
    const completed = record({ status: RecordStatus.Completed });
    expect(cachedDecision(completed, DIGEST)).toBe('duplicate');
    expect(cachedDecision(completed, OTHER)).toBe('keyReused');
  });

  test('own write: recognised only when owner, attempt, status, lease, result and local rows all match', () => {
    const done = record({ status: RecordStatus.Completed, leaseExpiresAtMs: 0, result: { chargeId: 'ch_1' }, localRows: ['a', 'b'] });
    const intended = {
      ownerId: 'owner-1',
      attempt: 1,
      status: RecordStatus.Completed,
      leaseExpiresAtMs: 0,
      resultJson: '{"chargeId":"ch_1"}',
      localRows: ['b', 'a'],
    };
    expect(isOwnWrite(done, { ...intended, localRows: ['a'] })).toBe(false);
    expect(isOwnWrite(done, { ...intended, localRows: ['a', 'c'] })).toBe(false);
    expect(isOwnWrite(done, intended)).toBe(true);
    expect(isOwnWrite(undefined, intended)).toBe(false);
    expect(isOwnWrite(done, { ...intended, ownerId: 'owner-2' })).toBe(false);
    expect(isOwnWrite(done, { ...intended, attempt: 2 })).toBe(false);
    expect(isOwnWrite(done, { ...intended, status: RecordStatus.Released })).toBe(false);
    expect(isOwnWrite(done, { ...intended, leaseExpiresAtMs: 1 })).toBe(false);
    expect(isOwnWrite(done, { ...intended, resultJson: '{"chargeId":"ch_2"}' })).toBe(false);
    expect(
      isOwnWrite(record({ status: RecordStatus.Released, leaseExpiresAtMs: 0 }), {
        ...intended,
        status: RecordStatus.Released,
        resultJson: undefined,
        localRows: [],
      }),
    ).toBe(true);
  });

  test('own write: a local row holds what the write meant only with exactly its properties (null values left out)', () => {
    expect(sameRowProperties({ v: 1, s: 'x' }, { v: 1, s: 'x', gone: null })).toBe(true);
    expect(sameRowProperties({ v: 1 }, { v: 2 })).toBe(false);
    expect(sameRowProperties({ v: 1, extra: true }, { v: 1 })).toBe(false);
    expect(sameRowProperties(undefined, { v: 1 })).toBe(false);
    expect(storedRowProperties({ a: null, b: false, c: 0 })).toEqual({ b: false, c: 0 });
  });
});

describe("reopening: an operator's reopen of a completed record, as the stores write it", () => {
  const completed = record({
    status: RecordStatus.Completed,
    leaseExpiresAtMs: 0,
    result: { status: 'failed', reason: 'budget spent' },
    attempt: 3,
    localRows: ['payment'],
    etag: 'W/"7"',
  });

  test("the record's own claim (owner, attempt, generation, rows, ETag: a record changed since is refused) to RELEASED, lease 0, result kept", () => {
    const { claim, change } = reopening(completed, 'operator retry', 1024);
    expect(claim).toEqual({
      key: { consumer: 'payments', key: 'pay-1' },
      recordId: 'record-1',
      digest: DIGEST,
      attempt: 3,
      ownerId: 'owner-1',
      leaseExpiresAtMs: 0,
      createdAtMs: 100,
      localRows: ['payment'],
      etag: 'W/"7"',
    });
    expect(change).toEqual({
      status: RecordStatus.Released,
      leaseExpiresAtMs: 0,
      resultJson: '{"status":"failed","reason":"budget spent"}',
      lastError: 'operator retry',
    });
    // What it leaves is recognised as its own write (an answer lost after it landed): same owner, attempt, status, result, rows.
    const reopened = { ...completed, status: RecordStatus.Released, lastError: 'operator retry', etag: 'W/"8"' };
    expect(isOwnWrite(reopened, { ...claim, ...change })).toBe(true);
    expect(isOwnWrite({ ...reopened, attempt: 4, status: RecordStatus.InProgress }, { ...claim, ...change })).toBe(false);
  });

  test('the reason is cut to the bound; a record without a result keeps none', () => {
    expect(reopening(completed, 'x'.repeat(50), 10).change.lastError).toBe('x'.repeat(10));
    expect(reopening({ ...completed, result: undefined }, 'r', 10).change.resultJson).toBeUndefined();
  });

  test('only a completed record is reopened: in progress or released is a ConfigurationError', () => {
    for (const status of [RecordStatus.InProgress, RecordStatus.Released]) {
      expect(() => reopening({ ...completed, status }, 'r', 10)).toThrow(ConfigurationError);
    }
    expect(() => reopening({ ...completed, status: RecordStatus.Released }, 'r', 10)).toThrow('only a completed record is reopened; this one is RELEASED');
  });
});

// The decision rules every store applies (recordRules.ts, record.ts): the statuses, a record's copies, own writes and
// held claims, and a store's reopen through its conditional rewrite.
describe('record rules: statuses, copies, own writes, held claims and the stores reopen', () => {
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
      expect(isOwnWrite(record({ status: RecordStatus.Released, result: undefined, localRows: ['b', 'a'] }), { ...intended, localRows: ['a', 'b'] })).toBe(
        true,
      );
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
});
