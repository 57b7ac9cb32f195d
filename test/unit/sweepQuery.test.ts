import { markerRangeFilter } from '../../packages/idempotency/src/stores/table/sweep/sweepQuery';

/**
 * The filter the sweep's re-read of a chunk sends (packages/idempotency/src/stores/table/sweep/sweepQuery.ts): the
 * RowKey range of the chunk in its partition, markers only (a record's local rows share the range: `<marker>~<name>`),
 * quotes in row keys doubled as OData requires.
 */
const row = (rowKey: string) => ({
  partitionKey: 'p00a',
  rowKey,
  etag: 'e',
  status: 'COMPLETED' as never,
  leaseExpiresAtMs: 0,
  retentionExpiresAtMs: 0,
  localRows: [],
});

test('the chunk range, markers only', () => {
  expect(markerRangeFilter([row('a1'), row('b2'), row('c3')])).toBe(
    "PartitionKey eq 'p00a' and RowKey ge 'a1' and RowKey le 'c3' and kind eq 'idempotency-marker'",
  );
});

test("a quote in a row key is doubled (o'brien -> o''brien)", () => {
  expect(markerRangeFilter([row("o'brien"), row("z'")])).toBe(
    "PartitionKey eq 'p00a' and RowKey ge 'o''brien' and RowKey le 'z''' and kind eq 'idempotency-marker'",
  );
});
