import { ParkingStore, ParkReason } from '../../src/messaging';
import { useAzurite } from '../support/azurite';
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
});
