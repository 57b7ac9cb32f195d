import { ParkingStore, ParkReason } from '../../src/messaging';
import { TableClient } from '@azure/data-tables';
import { randomBytes } from 'node:crypto';
import { useAzurite } from '../support/azurite';
import { entitySize, tableLimitViolations, withTableLimits } from '../support/tableLimits';
import { FakeClock, freshTable } from '../support/tables';

const azuriteOf = useAzurite();

describe('ParkingStore on Azurite', () => {
  test('park keeps the whole body, the reason and ids; parking the same message twice keeps one row', async () => {
    const store = new ParkingStore(await freshTable(azuriteOf(), 'parked'), new FakeClock());
    const body = '{"paymentId":"p1", "amount": "oops"' + 'x'.repeat(100_000);
    const message = { consumer: 'payments', reason: ParkReason.InvalidJson, detail: 'body is not JSON', info: { messageId: 'p1', deliveryCount: 1 }, body };
    const first = await store.park(message);
    const second = await store.park({ ...message, info: { messageId: 'p1', deliveryCount: 2 } });
    expect(second).toBe(first);
    const parked = await store.list('payments');
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({ reason: 'invalid-json', messageId: 'p1', bodyTruncated: false });
    expect(parked[0].body.toString('utf8')).toBe(body);
  });

  test('a reused key with another body is a second parked row; a message without an id is parked too', async () => {
    const store = new ParkingStore(await freshTable(azuriteOf(), 'parked'), new FakeClock());
    await store.park({ consumer: 'payments', reason: ParkReason.KeyReused, detail: 'd', info: { messageId: 'p1' }, body: { amount: 1 } });
    await store.park({ consumer: 'payments', reason: ParkReason.KeyReused, detail: 'd', info: { messageId: 'p1' }, body: { amount: 2 } });
    await store.park({
      consumer: 'payments',
      reason: ParkReason.MissingMessageId,
      detail: 'no MessageId',
      info: { messageId: undefined },
      body: { amount: 3 },
    });
    const parked = await store.list('payments');
    expect(parked.map((p) => p.reason).sort()).toEqual(['key-reused', 'key-reused', 'missing-message-id']);
  });

  test('bodies up to Service Bus Premium size are kept whole within Azure limits: 1 MB (Event Hubs) and 3.5 MB bodies, binary and in parts', async () => {
    const store = new ParkingStore(await freshTable(azuriteOf(), 'parked'), new FakeClock());
    const counted: string[] = [];
    store.client.pipeline.addPolicy({
      name: 'count',
      sendRequest: (request, next) => (counted.push(request.url.includes('$batch') ? 'batch' : request.method), next(request)),
    });
    const mb = randomBytes(1024 * 1024);
    const big = randomBytes(3.5 * 1024 * 1024);
    const text = 'é'.repeat(600_000); // 1.2 MB of UTF-8, 600,000 UTF-16 characters: 1.2 MB by the service's count as a string
    await store.park({ consumer: 'rewards', reason: ParkReason.Oversized, detail: 'd', info: { messageId: 'mb' }, body: mb });
    expect(counted).toEqual(['batch', 'PUT']); // one further row, then the head
    await store.park({ consumer: 'rewards', reason: ParkReason.Oversized, detail: 'd', info: { messageId: 'big' }, body: big });
    await store.park({ consumer: 'rewards', reason: ParkReason.InvalidJson, detail: 'd', info: { messageId: 'text' }, body: text });
    const parked = new Map((await store.list('rewards')).map((row) => [row.messageId, row]));
    expect(parked.get('mb')?.body.equals(mb)).toBe(true);
    expect(parked.get('big')?.body.equals(big)).toBe(true);
    expect(parked.get('text')?.body.toString('utf8')).toBe(text);
    expect([...parked.values()].map((row) => row.bodyTruncated)).toEqual([false, false, false]);
    expect(tableLimitViolations).toEqual([]);
  });

  test('the check of Azure limits refuses what Azurite accepts: the old base64-text parking of a 1 MB event (1.64 MB by the formula)', async () => {
    const raw = TableClient.fromConnectionString(azuriteOf().connectionString, (await freshTable(azuriteOf(), 'raw')).tableName, {
      allowInsecureConnection: true,
    });
    const base64 = randomBytes(600 * 1024).toString('base64'); // what parking kept before: 600 KiB as 819,200 characters
    const entity: Record<string, unknown> = { partitionKey: 'rewards', rowKey: 'old', bodyChunks: 26 };
    for (let i = 0; i < 26; i++) entity[`body${i}`] = base64.slice(i * 32_000, (i + 1) * 32_000);
    await raw.upsertEntity(entity as never, 'Replace'); // Azurite takes it
    // Rows parked that way before (deployed tables) are still read back.
    Object.assign(entity, { reason: 'oversized', detail: 'd', messageId: 'old' });
    await raw.upsertEntity(entity as never, 'Replace');
    expect((await new ParkingStore(raw).list('rewards'))[0].body.equals(Buffer.from(base64, 'base64'))).toBe(true);
    const size = entitySize({ PartitionKey: 'rewards', RowKey: 'old', ...Object.fromEntries(Object.entries(entity).slice(2)) });
    expect(size.bytes).toBeGreaterThan(1024 * 1024);
    const before = tableLimitViolations.length;
    await expect(withTableLimits(raw).upsertEntity(entity as never, 'Replace')).rejects.toMatchObject({ statusCode: 400 });
    expect(tableLimitViolations.slice(before).map((v) => v.what)).toEqual([expect.stringMatching(/^entity of \d+ bytes by the service's formula/)]);
    tableLimitViolations.length = before;
  });
});
