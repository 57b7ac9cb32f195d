import {
  ConfigurationError,
  int64,
  LOCAL_ROWS_PROPERTY,
  localRowKey,
  localRowsAfter,
  MARKER_KIND,
  markerEntity,
  markerPatch,
  MAX_LOCAL_ROWS,
  parseLocalRows,
  RecordStatus,
  staleRowsOnTakeover,
  StoreRequestError,
  tableAddress,
  toRecord,
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
