import { markerEntity, markerPatch, markerPatchOf, RecordStatus, tableAddress, toRecord, writtenRecord } from 'azure-functions-idempotency/internal';

/**
 * The Table store builds a written record and a merge patch straight from the state it writes (tableRows.ts
 * `writtenRecord`, `markerPatchOf`) instead of encoding a whole marker and decoding it again: both must be exactly
 * what the encoding gives.
 */
const key = { consumer: 'payments', key: 'pay-1' };
const fields = { key, address: tableAddress(key), digest: 'd'.repeat(64), createdAtMs: 1_000.7, nowMs: 2_000.4, retentionMs: 500 };
const states = [
  { status: RecordStatus.InProgress, ownerId: 'o-1', attempt: 1, leaseExpiresAtMs: 2_500.9, resultJson: undefined, localRows: [] as string[] },
  { status: RecordStatus.Completed, ownerId: 'o-2', attempt: 3, leaseExpiresAtMs: 0, resultJson: '{"ok":true,"n":[1,2]}', localRows: ['a', 'b'] },
  { status: RecordStatus.Released, ownerId: 'o-3', attempt: 2, leaseExpiresAtMs: 0, resultJson: undefined, lastError: 'Error: boom', localRows: ['a'] },
];

test.each(states.map((state) => [state.status, state] as const))(
  'a %s record as written equals the decoded marker, and its patch the marker patch',
  (_, state) => {
    expect(writtenRecord(fields, state, 'W/"e"')).toStrictEqual(toRecord({ ...markerEntity(fields, state), etag: 'W/"e"' }));
    expect(markerPatchOf(fields, state)).toStrictEqual(markerPatch(markerEntity(fields, state)));
  },
);

test('a written result is a parsed copy, not the string, and a malformed one fails as a decoded one does', () => {
  const record = writtenRecord(fields, states[1], 'e');
  expect(record.result).toEqual({ ok: true, n: [1, 2] });
  expect(() => writtenRecord(fields, { ...states[0], resultJson: '{not json' }, 'e')).toThrow('stored result is not valid JSON');
});
