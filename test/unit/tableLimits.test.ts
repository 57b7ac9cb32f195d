import { entitySize, TABLE_LIMITS } from '../support/tableLimits';

/** The test check of Azure's Table limits computes what the service documents (understanding-the-table-service-data-model). */
describe('tableLimits: the documented entity size formula and limits', () => {
  test('4 bytes + keys at 2 a character + per property 8 + name at 2 a character + the value by its type', () => {
    const entity = {
      PartitionKey: 'pk',
      RowKey: 'r',
      s: 'abc', // String: 4 + 3 x 2
      n: 5, // Int32: 4
      'b@odata.type': 'Edm.Binary',
      b: Buffer.alloc(10).toString('base64'), // Binary: 4 + 10
      'i64@odata.type': 'Edm.Int64',
      i64: '12', // Int64: 8
      flag: true, // Boolean: 1
      d: 1.5, // Double: 8
    };
    const expected = 4 + 3 * 2 + (8 + 2 + 10) + (8 + 2 + 4) + (8 + 2 + 14) + (8 + 6 + 8) + (8 + 8 + 1) + (8 + 2 + 8);
    expect(entitySize(entity)).toEqual({ bytes: expected, problems: [] });
  });

  test('over a limit: 1 MiB by the formula (strings at 2 a character), a string of 32 K characters, binary of 64 KiB, 252 properties', () => {
    const text = 'x'.repeat(30_000); // 60,004 bytes each as a string, though 30,000 in UTF-8
    const big = Object.fromEntries(Array.from({ length: 18 }, (_, i) => [`p${i}`, text]));
    expect(entitySize({ PartitionKey: 'p', RowKey: 'r', ...big }).problems).toEqual([expect.stringMatching(/^entity of 10\d{5} bytes/)]);
    expect(entitySize({ PartitionKey: 'p', RowKey: 'r', s: 'x'.repeat(TABLE_LIMITS.stringChars + 1) }).problems).toEqual([
      expect.stringMatching(/^string property s of 32769 characters/),
    ]);
    const binary = Buffer.alloc(TABLE_LIMITS.binaryBytes + 1).toString('base64');
    expect(entitySize({ PartitionKey: 'p', RowKey: 'r', b: binary, 'b@odata.type': 'Edm.Binary' }).problems).toEqual([
      expect.stringMatching(/^binary property b of 65537 bytes/),
    ]);
    const many = Object.fromEntries(Array.from({ length: 253 }, (_, i) => [`p${i}`, 1]));
    expect(entitySize({ PartitionKey: 'p', RowKey: 'r', ...many }).problems).toEqual(['253 properties (at most 252)']);
    expect(entitySize({ PartitionKey: 'a/b', RowKey: 'r' }).problems).toEqual(['PartitionKey holds a character the service refuses']);
  });
});
