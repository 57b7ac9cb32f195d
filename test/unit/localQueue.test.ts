import { LocalQueue, MessageLockLostError } from '../../tools/local/LocalQueue';
import { LocalServiceBus, type DeliveryEvent } from '../../tools/local/LocalServiceBus';
import { FakeClock } from '../support/tables';
import { buildOrdersWorkload, statusOfVersion } from '../../tools/demo/ordersWorkload';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('LocalQueue: Service Bus peek-lock semantics', () => {
  test('complete removes the message; abandon redelivers it at once with deliveryCount + 1', async () => {
    const queue = new LocalQueue('q', { lockDurationMs: 1_000 });
    queue.send({ messageId: 'a', body: 1 });
    const first = (await queue.receive())!;
    expect(first.deliveryCount).toBe(1);
    queue.abandon(first, new Error('boom'));
    const second = (await queue.receive())!;
    expect(second).toMatchObject({ sequenceNumber: first.sequenceNumber, deliveryCount: 2 });
    queue.complete(second);
    expect(queue.activeCount).toBe(0);
  });

  test('a message abandoned maxDeliveryCount times is dead-lettered with MaxDeliveryCountExceeded and its last error', async () => {
    const queue = new LocalQueue('q', { lockDurationMs: 1_000, maxDeliveryCount: 3 });
    queue.send({ messageId: 'poison', body: 'x' });
    for (let i = 1; i <= 3; i++) queue.abandon((await queue.receive())!, new Error(`failure ${i}`));
    expect(queue.activeCount).toBe(0);
    expect(queue.deadLetters).toEqual([expect.objectContaining({ deliveryCount: 3, reason: 'MaxDeliveryCountExceeded', lastError: 'Error: failure 3' })]);
  });

  test('expireAll (a pause past the time to live): waiting and locked messages go to the DLQ as TTLExpiredException; a locked delivery then loses its lock', async () => {
    const queue = new LocalQueue('q', { lockDurationMs: 60_000 });
    queue.send({ messageId: 'a', body: 1 });
    queue.send({ messageId: 'b', body: 2 });
    const locked = (await queue.receive())!;
    expect(queue.expireAll()).toBe(2);
    expect(queue.activeCount).toBe(0);
    expect(queue.deadLetters.map((d) => [d.message.messageId, d.reason, d.deliveryCount])).toEqual([
      ['a', 'TTLExpiredException', 1],
      ['b', 'TTLExpiredException', 0],
    ]);
    expect(() => queue.complete(locked)).toThrow(MessageLockLostError);
    expect(queue.resubmitDeadLetters().map((d) => d.message.messageId)).toEqual(['a', 'b']);
    expect(queue.activeCount).toBe(2);
  });

  test('an operator resubmits dead-lettered messages: they leave the DLQ and come back as new messages (same MessageId and body, deliveryCount 1)', async () => {
    const queue = new LocalQueue('q', { lockDurationMs: 1_000, maxDeliveryCount: 1 });
    queue.send({ messageId: 'a', body: 1 });
    queue.send({ messageId: 'b', body: 2 });
    for (let i = 0; i < 2; i++) queue.abandon((await queue.receive())!, new Error('down'));
    expect(queue.deadLetters.map((d) => d.message.messageId)).toEqual(['a', 'b']);
    const resubmitted = queue.resubmitDeadLetters((d) => d.message.messageId === 'b');
    expect(resubmitted.map((d) => d.message.messageId)).toEqual(['b']);
    expect(queue.deadLetters.map((d) => d.message.messageId)).toEqual(['a']);
    const again = (await queue.receive())!;
    expect(again).toMatchObject({ message: { messageId: 'b', body: 2 }, deliveryCount: 1 });
    expect(again.sequenceNumber).toBeGreaterThan(resubmitted[0].sequenceNumber);
    queue.complete(again);
    expect(queue.stats).toMatchObject({ sent: 2, resubmitted: 1, deadLettered: 2 });
    expect(queue.activeCount).toBe(0);
  });

  test('an expired lock makes the message visible to another receiver; the first receiver then fails to complete it and it stays', async () => {
    const clock = new FakeClock();
    const queue = new LocalQueue('q', { lockDurationMs: 1_000, clock });
    queue.send({ messageId: 'slow', body: 1 });
    const slow = (await queue.receive())!;
    clock.advance(1_001);
    const other = (await queue.receive())!;
    expect(other).toMatchObject({ sequenceNumber: slow.sequenceNumber, deliveryCount: 2 });
    expect(() => queue.complete(slow)).toThrow(MessageLockLostError);
    expect(queue.activeCount).toBe(1);
    queue.complete(other);
    expect(queue.activeCount).toBe(0);
    expect(queue.stats).toMatchObject({ lockExpired: 1, lockLost: 1, completed: 1 });
  });

  test('duplicate detection drops a resend of a MessageId within the window, and only when switched on', () => {
    const clock = new FakeClock();
    const on = new LocalQueue('q', { lockDurationMs: 1_000, duplicateDetectionWindowMs: 60_000, clock });
    expect(on.send({ messageId: 'm', body: 1 })).toBe(true);
    expect(on.send({ messageId: 'm', body: 1 })).toBe(false);
    clock.advance(60_000);
    expect(on.send({ messageId: 'm', body: 1 })).toBe(true);
    const off = new LocalQueue('q', { lockDurationMs: 1_000 });
    expect(off.send({ messageId: 'm', body: 1 })).toBe(true);
    expect(off.send({ messageId: 'm', body: 1 })).toBe(true);
    expect(on.stats.droppedAsDuplicate).toBe(1);
  });
});

describe('LocalServiceBus: competing receivers settle like the Functions trigger', () => {
  test('return completes, throw abandons, a crash leaves the lock to lapse, a lost ack redelivers', async () => {
    const events: DeliveryEvent[] = [];
    const crashed = new Set<string>();
    const bus = new LocalServiceBus(
      { lockDurationMs: 100 },
      {
        isCrash: (error) => (error as Error).message === 'crash',
        loseAck: (locked) => locked.message.messageId === 'ack' && locked.deliveryCount === 1,
        onDelivery: (event) => events.push(event),
      },
    );
    let failures = 0;
    bus.start(
      {
        name: 'c',
        queue: 'q',
        deliver: async (body, meta) => {
          if (body === 'fail' && failures++ === 0) throw new Error('transient');
          if (body === 'crash' && !crashed.has(String(meta.messageId))) {
            crashed.add(String(meta.messageId));
            throw new Error('crash');
          }
          return meta.deliveryCount;
        },
      },
      3,
    );
    for (const id of ['ok', 'fail', 'crash', 'ack']) bus.send('q', { messageId: id, body: id });
    for (let i = 0; i < 100 && !bus.idle; i++) await sleep(20);
    await bus.stop();
    const kinds = (id: string) => events.filter((e) => e.locked.message.messageId === id).map((e) => `${e.kind}@${e.locked.deliveryCount}`);
    expect(kinds('ok')).toEqual(['completed@1']);
    expect(kinds('fail')).toEqual(['abandoned@1', 'completed@2']);
    expect(kinds('crash')).toEqual(['crashed@1', 'completed@2']);
    expect(kinds('ack')).toEqual(['ackLost@1', 'completed@2']);
  });

  test('application properties reach the handler as the trigger passes them ({} when the producer set none)', async () => {
    const seen: unknown[] = [];
    const bus = new LocalServiceBus({ lockDurationMs: 1_000 });
    bus.start({ name: 'o', queue: 'orders', deliver: async (_body, meta) => seen.push(meta.applicationProperties) }, 1);
    bus.send('orders', { messageId: 'a', body: {}, applicationProperties: { type: 'OrderStatusChanged' } });
    for (let i = 0; i < 100 && !bus.idle; i++) await sleep(10);
    bus.send('orders', { messageId: 'b', body: {} });
    for (let i = 0; i < 100 && !bus.idle; i++) await sleep(10);
    await bus.stop();
    expect(seen).toEqual([{ type: 'OrderStatusChanged' }, {}]);
  });
});

describe('chaos orders workload', () => {
  test('is seeded; statuses follow their order (or race it when early), versions 1..k say one status each', () => {
    const a = buildOrdersWorkload({ messages: 400, duplicateRate: 0.3, seed: 5 });
    expect(buildOrdersWorkload({ messages: 400, duplicateRate: 0.3, seed: 5 })).toEqual(a);
    expect(a.messages).toHaveLength(400);
    const statuses = a.messages.filter((m) => m.kind === 'status');
    for (const s of statuses) {
      const order = a.messages[s.orderIndex!];
      expect(order.kind).toBe('order');
      expect(s.body).toEqual({ orderId: order.messageId, status: statusOfVersion(s.version!), version: s.version });
      expect(s.messageId).toBe(`${order.messageId}:status:${s.version}`);
      expect(s.applicationProperties).toEqual({ type: 'OrderStatusChanged' });
    }
    // Every send is planned exactly once: at the start, or after its order completed.
    const planned = a.messages.reduce((n, m) => n + 1 + m.extraCopies, 0);
    const after = [...a.afterOrder.values()].reduce((n, s) => n + s.length, 0);
    expect(a.initialSends.length + after).toBe(planned);
    const initial = new Set(a.initialSends.map((s) => s.index));
    for (const s of statuses) expect(initial.has(s.index)).toBe(Boolean(s.early));
    for (const m of a.messages.filter((x) => x.kind === 'reusedKey')) expect(initial.has(m.index)).toBe(false);
    expect(a.messages.some((m) => m.kind === 'malformed') && a.messages.some((m) => m.kind === 'reusedKey') && statuses.some((s) => s.early)).toBe(true);
  });
});
