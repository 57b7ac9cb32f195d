import { LocalServiceBus } from '../../tools/local/LocalServiceBus';

/** `whenIdle`: a run waits for the local bus to settle, and fails with what the bus saw instead of hanging. */
describe('LocalServiceBus.whenIdle', () => {
  test('resolves once every message is settled and no handler runs', async () => {
    const bus = new LocalServiceBus({ lockDurationMs: 60_000, maxDeliveryCount: 3 });
    let handled = 0;
    for (const id of ['a', 'b', 'c']) bus.send('q', { messageId: id, body: id });
    bus.start({ name: 'q', queue: 'q', deliver: async () => void handled++ }, 2);
    await bus.whenIdle(30_000);
    expect(handled).toBe(3);
    expect(bus.idle).toBe(true);
    expect(bus.queue('q').stats.completed).toBe(3);
    await bus.stop();
  });

  test('a handler that never settles fails the wait after the cap, naming the queue, its counts and the running handler', async () => {
    const bus = new LocalServiceBus({ lockDurationMs: 60_000, maxDeliveryCount: 3 });
    let release: () => void = () => undefined;
    bus.send('payments', { messageId: 'stuck', body: 1 });
    bus.start({ name: 'payments', queue: 'payments', deliver: () => new Promise<void>((r) => (release = r)) }, 1);
    await expect(bus.whenIdle(200)).rejects.toThrow(/still busy after 0 s \(1 handler\(s\) running\): payments: \{.*"deliveries":1.*\}, 1 ready or locked/);
    release();
    await bus.whenIdle(30_000);
    await bus.stop();
  });
});
