import { LocalServiceBus, type DeliveryEvent } from '../../tools/local/LocalServiceBus';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('LocalServiceBus: lock auto-renewal, as the Functions host renews a running delivery', () => {
  const handlerMs = 2_000;
  const lockDurationMs = 1_000;

  async function runOne(autoRenewLock?: { beforeExpiryMs: number; maxDurationMs: number }) {
    const events: DeliveryEvent[] = [];
    const bus = new LocalServiceBus({ lockDurationMs, maxDeliveryCount: 1 }, { autoRenewLock, onDelivery: (e) => events.push(e) });
    bus.send('q', { messageId: 'slow', body: 1 });
    bus.start({ name: 'slow', queue: 'q', deliver: () => sleep(handlerMs) }, 1);
    await sleep(handlerMs + 400);
    const stats = { ...bus.queue('q').stats };
    await bus.stop();
    return { kinds: events.map((e) => e.kind), stats };
  }

  test('a handler longer than the lock keeps it by renewals and completes; every renewal is counted', async () => {
    const { kinds, stats } = await runOne({ beforeExpiryMs: 600, maxDurationMs: 60_000 });
    expect(kinds[0]).toBe('completed');
    expect(stats.completed).toBe(1);
    // 2 s of work on a 1 s lock renewed 600 ms before it ends: renewals at about 0.4, 0.8, 1.2, 1.6 s (a late timer: fewer).
    expect(stats.renewed).toBeGreaterThanOrEqual(3);
    expect(stats.renewed).toBeLessThanOrEqual(5);
  }, 30_000);

  test('without renewal the same handler loses its lock and cannot complete (no renewal counted)', async () => {
    const { kinds, stats } = await runOne(undefined);
    expect(kinds[0]).toBe('lockLost');
    expect(stats.completed).toBe(0);
    expect(stats.renewed).toBe(0);
  }, 30_000);

  test('renewal stops at maxDurationMs: the lock then lapses', async () => {
    const { kinds, stats } = await runOne({ beforeExpiryMs: 600, maxDurationMs: 700 });
    expect(kinds[0]).toBe('lockLost');
    // One renewal at about 0.4 s (lock now ends at about 1.4 s); the next would be at 0.8 s, past 0.7 s: none.
    expect(stats.renewed).toBe(1);
  }, 30_000);
});
