import {
  allPartitions,
  ConfigurationError,
  effectEntity,
  int64,
  LOCAL_ROWS_PROPERTY,
  localRowKey,
  localRowsAfter,
  MARKER_KIND,
  markerEntity,
  markerPatch,
  MAX_LOCAL_ROWS,
  parseLocalRows,
  partitionName,
  RecordStatus,
  resolveTableStoreOptions,
  staleRowsOnTakeover,
  StoreRequestError,
  tableAddress,
  toNumber,
  toRecord,
  validatePartitionCount,
} from 'azure-functions-idempotency/internal';

const key = { consumer: 'payments', key: 'pay-1' };
const address = tableAddress(key);
const fields = { key, address, digest: 'd'.repeat(64), createdAtMs: 1_000, nowMs: 2_000, retentionMs: 500 };
const state = {
  status: RecordStatus.InProgress,
  ownerId: 'o-1',
  attempt: 2,
  leaseExpiresAtMs: 2_500.7,
  resultJson: undefined,
  localRows: ['payment', 'audit'],
};

describe('table rows', () => {
  test('marker: times are Int64 (truncated), retention counts from the write, local rows listed', () => {
    const marker = markerEntity(fields, state);
    expect(marker).toMatchObject({
      partitionKey: address.partitionKey,
      rowKey: address.rowKey,
      kind: MARKER_KIND,
      consumer: 'payments',
      idempotencyKey: 'pay-1',
      attempt: 2,
    });
    expect(marker.leaseExpiresAtMs).toEqual({ value: '2500', type: 'Int64' });
    expect(marker.retentionExpiresAtMs).toEqual(int64(2_500));
    expect(marker.createdAtMs).toEqual(int64(1_000));
    expect(marker[LOCAL_ROWS_PROPERTY]).toBe('payment,audit');
    expect('resultJson' in marker).toBe(false);
  });

  test('marker <-> record: a written marker reads back as the record it stands for', () => {
    const marker = markerEntity(fields, { ...state, status: RecordStatus.Completed, resultJson: '{"ok":true}', lastError: 'x' });
    expect(toRecord({ ...marker, etag: 'W/"2"' })).toEqual({
      recordId: marker.rowKey,
      consumer: 'payments',
      key: 'pay-1',
      status: RecordStatus.Completed,
      digest: fields.digest,
      result: { ok: true },
      attempt: 2,
      ownerId: 'o-1',
      leaseExpiresAtMs: 2_500,
      retentionExpiresAtMs: 2_500,
      createdAtMs: 1_000,
      updatedAtMs: 2_000,
      lastError: 'x',
      localRows: ['payment', 'audit'],
      etag: 'W/"2"',
    });
  });

  test('record: a row without createdAtMs (older version) takes its updatedAtMs as generation; bad result JSON is a StoreRequestError', () => {
    const marker = markerEntity(fields, state);
    delete marker.createdAtMs;
    expect(toRecord(marker).createdAtMs).toBe(2_000);
    expect(() => toRecord({ ...marker, resultJson: '{' })).toThrow(StoreRequestError);
  });

  test('patch: only keys and the properties a later write changes', () => {
    const patch = markerPatch(markerEntity(fields, { ...state, lastError: 'boom' }));
    expect(Object.keys(patch).sort()).toEqual(
      ['lastError', 'leaseExpiresAtMs', LOCAL_ROWS_PROPERTY, 'partitionKey', 'retentionExpiresAtMs', 'rowKey', 'status', 'updatedAtMs'].sort(),
    );
  });

  test('local rows: RowKey <marker>~<name>; the list parses back, absent is none', () => {
    expect(localRowKey('abc', 'payment')).toBe('abc~payment');
    expect(parseLocalRows('a,b')).toEqual(['a', 'b']);
    expect(parseLocalRows('')).toEqual([]);
    expect(parseLocalRows(undefined)).toEqual([]);
  });

  test('local rows: a completion adds its rows once; more than MAX_LOCAL_ROWS is a ConfigurationError', () => {
    const effect = (name: string) => ({ name, properties: {} });
    expect(localRowsAfter(['payment'], [effect('payment'), effect('audit')])).toEqual(['payment', 'audit']);
    const full = Array.from({ length: MAX_LOCAL_ROWS }, (_, i) => `r${i}`);
    expect(() => localRowsAfter(full, [effect('one-more')])).toThrow(ConfigurationError);
  });

  test('local rows: a takeover deletes the previous rows it does not write again, within one transaction', () => {
    expect(staleRowsOnTakeover(['payment', 'old'], ['payment'], 'k')).toEqual(['old']);
    const previous = Array.from({ length: 50 }, (_, i) => `old${i}`);
    const written = Array.from({ length: 50 }, (_, i) => `new${i}`);
    expect(() => staleRowsOnTakeover(previous, written, 'k')).toThrow(ConfigurationError);
    expect(staleRowsOnTakeover(previous.slice(0, 49), written, 'k')).toHaveLength(49);
  });
});

/**
 * The rows and addresses at their edges (tableRows.ts, partitions.ts, tableStoreOptions.ts): properties left out rather
 * than written empty, null effect properties dropped, numbers as read back, partition names and bounds, and the
 * options' error naming the store.
 */
describe('rows, partitions and options at their edges', () => {
  const key = { consumer: 'payments', key: 'pay-1' };
  const fields = { key, address: tableAddress(key), digest: 'd'.repeat(64), createdAtMs: 1_000, nowMs: 2_000, retentionMs: 500 };
  const state = { status: RecordStatus.InProgress, ownerId: 'o-1', attempt: 1, leaseExpiresAtMs: 2_500, resultJson: undefined, localRows: [] as string[] };

  test('a marker without result, error or local rows has no such properties (a merge would otherwise blank them)', () => {
    const marker = markerEntity(fields, state);
    expect(Object.keys(marker)).not.toContain('resultJson');
    expect(Object.keys(marker)).not.toContain('lastError');
    expect(Object.keys(marker)).not.toContain('localRows');
    const full = markerEntity(fields, { ...state, resultJson: '{"ok":true}', lastError: 'boom', localRows: ['a'] });
    expect(full).toMatchObject({ resultJson: '{"ok":true}', lastError: 'boom', localRows: 'a' });
  });

  test("an effect's row leaves out null properties, keeps the others, and cannot overwrite its keys or kind", () => {
    const marker = markerEntity(fields, state);
    const row = effectEntity(marker, { name: 'audit', properties: { amount: 5, note: null, flag: false, partitionKey: 'evil', kind: 'x' } });
    expect(row).toEqual({ amount: 5, flag: false, partitionKey: marker.partitionKey, rowKey: `${marker.rowKey}~audit`, kind: 'audit' });
    expect(Object.keys(row)).not.toContain('note');
  });

  test('a record read back: lastError only when a string; createdAtMs defaults to updatedAtMs', () => {
    const entity = { ...markerEntity(fields, state), etag: 'W/"1"', lastError: 42, createdAtMs: undefined } as never;
    const record = toRecord(entity);
    expect(record.lastError).toBeUndefined();
    expect(record.createdAtMs).toBe(2_000);
    expect(toRecord({ ...markerEntity(fields, state), etag: 'e', lastError: 'why' }).lastError).toBe('why');
  });

  test('a stored result that is not JSON: a request error of the read that says so', () => {
    const entity = { ...markerEntity(fields, { ...state, resultJson: '{not json' }), etag: 'e' } as never;
    expect(() => toRecord(entity)).toThrow(StoreRequestError);
    expect(() => toRecord(entity)).toThrow('stored result is not valid JSON');
    let thrown: unknown;
    try {
      toRecord(entity);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ operation: 'read' });
  });

  test('numbers as read back', () => {
    expect(toNumber(7)).toBe(7);
    expect(toNumber(BigInt(8))).toBe(8);
    expect(toNumber('9')).toBe(9);
    expect(toNumber({ value: '10', type: 'Int64' })).toBe(10);
    expect(toNumber(null)).toBeNaN();
    expect(toNumber({})).toBeNaN();
    expect(toNumber(true)).toBeNaN();
  });

  test('partition names are p + three hex digits; 1 to 4096 partitions', () => {
    expect(partitionName(0)).toBe('p000');
    expect(partitionName(1)).toBe('p001');
    expect(partitionName(255)).toBe('p0ff');
    expect(partitionName(4095)).toBe('pfff');
    expect(allPartitions(1)).toEqual(['p000']);
    expect(allPartitions(4096)).toHaveLength(4096);
    expect(validatePartitionCount(1)).toBe(1);
    expect(validatePartitionCount(4096)).toBe(4096);
    for (const bad of [0, 4097, 1.5, -1, Number.NaN]) {
      expect(() => validatePartitionCount(bad)).toThrow(ConfigurationError);
      expect(() => validatePartitionCount(bad)).toThrow(`partition count must be an integer from 1 to 4096, got ${bad}`);
    }
  });

  test("the store's options: the partition count checked, an error naming TableIdempotencyStore options", () => {
    expect(resolveTableStoreOptions({ retentionMs: 86_400_000 }).partitionCount).toBe(16);
    expect(resolveTableStoreOptions({ retentionMs: 86_400_000, partitionCount: 4 }).partitionCount).toBe(4);
    expect(() => resolveTableStoreOptions({ retentionMs: 86_400_000, partitionCount: 0 })).toThrow('partition count must be an integer from 1 to 4096, got 0');
    expect(() => resolveTableStoreOptions(null as never)).toThrow(/TableIdempotencyStore options/);
  });
});
