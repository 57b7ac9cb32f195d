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
