import {
  InMemoryIdempotencyStore,
  keyFromMessageId,
  LeaseHeartbeat,
  LeaseLostError,
  payloadDigest,
  StoreUnavailableError,
  type Claim,
  type IdempotencyStore,
} from 'azure-functions-idempotency/internal';
import { FakeClock } from '../support/tables';

/** Timers driven by hand: `run(ms)` moves the clock and fires what is due, in order. */
function manualTimers(clock: FakeClock) {
  const pending: Array<{ at: number; callback: () => void; id: number }> = [];
  const delays: number[] = [];
  let ids = 0;
  return {
    delays,
    timers: {
      setTimeout: (callback: () => void, ms: number) => {
        delays.push(ms);
        const timer = { at: clock.now + ms, callback, id: ++ids };
        pending.push(timer);
        return timer.id;
      },
      clearTimeout: (handle: unknown) => {
        const index = pending.findIndex((timer) => timer.id === handle);
        if (index >= 0) pending.splice(index, 1);
      },
      nowMs: () => clock.nowMs(),
    },
    async run(ms: number) {
      const end = clock.now + ms;
      for (;;) {
        pending.sort((a, b) => a.at - b.at);
        const next = pending[0];
        if (!next || next.at > end) break;
        pending.shift();
        clock.now = Math.max(clock.now, next.at);
        next.callback();
        await new Promise((resolve) => setImmediate(resolve));
      }
      clock.now = end;
    },
  };
}

async function claimed(store: IdempotencyStore, id: string): Promise<Claim> {
  const outcome = await store.claim(keyFromMessageId('hb', id), payloadDigest({ id }));
  if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  return outcome.claim;
}

describe('lease heartbeat: the local lease-end timer', () => {
  test('a renewal that never answers: the signal aborts a margin before the lease end, not when the call gives up', async () => {
    const clock = new FakeClock();
    const memory = new InMemoryIdempotencyStore({ leaseMs: 3_000, clock });
    const claim = await claimed(memory, 'hang');
    const hanging: IdempotencyStore = Object.assign(Object.create(memory) as IdempotencyStore, { renewLease: () => new Promise<Claim>(() => undefined) });
    const manual = manualTimers(clock);
    const heartbeat = new LeaseHeartbeat(hanging, claim, 3_000, manual.timers).start();
    expect(heartbeat.marginMs).toBe(300);
    await manual.run(2_699);
    expect(heartbeat.signal.aborted).toBe(false);
    await manual.run(1);
    expect(heartbeat.signal.aborted).toBe(true);
    expect(heartbeat.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(clock.now).toBeLessThan(claim.leaseExpiresAtMs);
    expect(await heartbeat.stop()).toBe(claim); // does not wait for the hung renewal once the lease is lost
  });

  test('each confirmed renewal moves the lease-end timer; without renewals it still fires', async () => {
    const clock = new FakeClock();
    const memory = new InMemoryIdempotencyStore({ leaseMs: 3_000, clock });
    const manual = manualTimers(clock);
    const renewing = new LeaseHeartbeat(memory, await claimed(memory, 'renew'), 3_000, manual.timers).start();
    await manual.run(10_000);
    expect(renewing.signal.aborted).toBe(false);
    expect(renewing.claim.leaseExpiresAtMs).toBeGreaterThan(clock.now);
    await renewing.stop();
    const watching = new LeaseHeartbeat(memory, await claimed(memory, 'watch'), 3_000, manual.timers).start(false);
    await manual.run(2_700);
    expect(watching.signal.aborted).toBe(true);
  });

  test('a renewal that failed without an answer (it may have landed) is tried again within a third of the time left, not an interval later', async () => {
    const clock = new FakeClock();
    const memory = new InMemoryIdempotencyStore({ leaseMs: 3_000, clock });
    const claim = await claimed(memory, 'late');
    const calls: number[] = [];
    let failures = 1;
    // The first renewal lands at the store, but its answer is lost (the call deadline passed): the caller sees a failure.
    const late: IdempotencyStore = Object.assign(Object.create(memory) as IdempotencyStore, {
      renewLease: async (c: Claim, leaseMs?: number) => {
        calls.push(clock.now - claim.createdAtMs);
        const renewed = await memory.renewLease(c, leaseMs);
        if (failures-- > 0) throw new StoreUnavailableError('no answer by the call deadline (test)', 'renewLease', undefined, true);
        return renewed;
      },
    });
    const manual = manualTimers(clock);
    const heartbeat = new LeaseHeartbeat(late, claim, 3_000, manual.timers).start();
    await manual.run(6_000);
    // 1,000: lands, answer lost; the abort deadline is 2,700: next try at 1,000 + (2,700 - 1,000) / 3 = 1,566, confirmed.
    expect(calls.slice(0, 3)).toEqual([1_000, 1_566, 2_566]);
    expect(heartbeat.signal.aborted).toBe(false);
    await heartbeat.stop();
  });

  test('a store that keeps failing is tried ever sooner until the lease end, then the signal aborts', async () => {
    const clock = new FakeClock();
    const memory = new InMemoryIdempotencyStore({ leaseMs: 3_000, clock });
    const claim = await claimed(memory, 'down');
    const calls: number[] = [];
    const down: IdempotencyStore = Object.assign(Object.create(memory) as IdempotencyStore, {
      renewLease: () => {
        calls.push(clock.now - claim.createdAtMs);
        return Promise.reject(new StoreUnavailableError('unavailable (test)', 'renewLease', undefined, false));
      },
    });
    const manual = manualTimers(clock);
    const heartbeat = new LeaseHeartbeat(down, claim, 3_000, manual.timers).start();
    await manual.run(3_000);
    expect(heartbeat.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(calls.slice(0, 4)).toEqual([1_000, 1_566, 1_944, 2_196]);
    expect(calls.every((at) => at < 2_700)).toBe(true);
    expect(calls.length).toBeLessThan(20); // bounded: each try waits a third of what is left
  });

  test('a lease end further away than a Node timer can wait is never armed past its limit', async () => {
    const clock = new FakeClock();
    const memory = new InMemoryIdempotencyStore({ leaseMs: 86_400_000, clock });
    const manual = manualTimers(clock);
    const claim = await claimed(memory, 'far');
    const heartbeat = new LeaseHeartbeat(memory, { ...claim, leaseExpiresAtMs: clock.now + 30 * 86_400_000 }, 86_400_000, manual.timers).start(false);
    expect(Math.max(...manual.delays)).toBeLessThanOrEqual(2_147_483_647);
    await heartbeat.stop();
  });
});
