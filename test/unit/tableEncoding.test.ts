import { allPartitions, tableAddress, validatePartitionCount } from 'azure-functions-idempotency/internal';

const FORBIDDEN = /[/\\#?\u0000-\u001f\u007f-\u009f]/;

describe('table encoding', () => {
  test('keys with forbidden, control and non-ASCII characters map to valid, deterministic addresses', () => {
    const keys = ['a/b', 'a\\b', 'a#b', 'a?b', '\u0000\u0001\n\t', 'ödeme-ğüşıç', '支付', '😀', ' a ', 'x'.repeat(8192)];
    for (const key of keys) {
      const address = tableAddress({ consumer: 'payments', key });
      expect(address.partitionKey).not.toMatch(FORBIDDEN);
      expect(address.rowKey).toMatch(/^[0-9a-f]{64}$/);
      expect(Buffer.byteLength(address.partitionKey) + Buffer.byteLength(address.rowKey)).toBeLessThan(1024);
      expect(tableAddress({ consumer: 'payments', key })).toEqual(address);
    }
  });

  test('no collisions over 100,000 keys; consumers get different rows for one key', () => {
    const rows = new Set<string>();
    for (let i = 0; i < 100_000; i++) rows.add(tableAddress({ consumer: 'c', key: `k${i}` }).rowKey);
    expect(rows.size).toBe(100_000);
    expect(tableAddress({ consumer: 'a', key: 'k' }).rowKey).not.toBe(tableAddress({ consumer: 'b', key: 'k' }).rowKey);
  });

  test('keys spread evenly over the partitions', () => {
    const counts = new Map<string, number>();
    const n = 64_000;
    for (let i = 0; i < n; i++) {
      const { partitionKey } = tableAddress({ consumer: 'c', key: `order-${i}` }, 16);
      counts.set(partitionKey, (counts.get(partitionKey) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(allPartitions(16));
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan((n / 16) * 0.9);
      expect(count).toBeLessThan((n / 16) * 1.1);
    }
  });

  test('partition count is validated', () => {
    expect(() => validatePartitionCount(0)).toThrow(/from 1 to 4096/);
    expect(() => validatePartitionCount(1.5)).toThrow(/integer/);
    expect(validatePartitionCount(16)).toBe(16);
  });
});
