import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeWorkflow, WorkflowStatus } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { inMemoryTelemetry } from '../support/telemetry';

/**
 * handOffWhenFree's wait (src/payments/PaymentsConsumer.ts, issue 51 item 4) against a workflow that behaves as the task
 * hub does: a start is refused while the older attempt's run is in flight, and the delivery's own clock moves only by
 * its sleeps. refusedStart.test.ts scripts one refusal; these hold the wait's loop to its rule: poll the older run's
 * status with a growing backoff and start only once it no longer runs, and always sleep between refused starts.
 */
const payment = { paymentId: 'pay-wait', customerId: 'cust-1', amount: 1250, currency: 'EUR' };

/** A lapsed record of attempt 1 (its delivery died after the claim), a consumer on a clock its sleeps move. */
async function lapsedDelivery(workflowOf: (clock: () => number) => ChargeWorkflow, waitBudgetMs = 60_000) {
  let now = Date.UTC(2026, 0, 1);
  const clock = { nowMs: () => now };
  const store = new InMemoryIdempotencyStore({ clock, leaseMs: 30_000 });
  await store.claim(keyFromMessageId('payments', payment.paymentId), payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  now += 60_000;
  const sleeps: number[] = [];
  const consumer = new PaymentsConsumer({
    store,
    parking: { park: async () => undefined } as unknown as ParkingStore,
    telemetry: inMemoryTelemetry().telemetry,
    clock,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
    waitBudgetMs,
    design: 'handoff',
  }).withWorkflow(workflowOf(() => now));
  return { sleeps, deliver: () => consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 2 }), now: () => now };
}

const fenced: WorkflowStatus = { state: 'completed', output: { status: 'failed', reason: 'not charged: the record moved on' } };

describe('handOffWhenFree: waiting for an older attempt’s run', () => {
  test('polls the running older run with a growing backoff and starts its own once, when that run has ended', async () => {
    let endsAt = 0;
    let reads = 0;
    const starts: number[] = [];
    const d = await lapsedDelivery((now) => ({
      // The trigger's look finds no run (read 1); attempt 1's start lands right after and runs for 300 ms.
      status: async () => (reads++ === 0 ? { state: 'none' } : now() < endsAt ? { state: 'running' } : fenced),
      start: async () => {
        starts.push(now());
        if (starts.length === 1) endsAt = now() + 300;
        return now() < endsAt ? 'running' : 'started';
      },
    }));
    const t0 = d.now();
    await expect(d.deliver()).resolves.toMatchObject({ outcome: 'handedOff', attempt: 2 });
    // The takeover's shortest wait (1 ms), then 25, 50, 100, 200 ms (the run ended 300 ms after the refused start).
    expect(d.sleeps).toEqual([1, 25, 50, 100, 200]);
    expect(starts).toEqual([t0 + 1, t0 + 376]);
  });

  test('a start refused while the status reads no run (a run still pending): it still sleeps between starts, backing off, until its deadline', async () => {
    let starts = 0;
    const d = await lapsedDelivery(
      () => ({
        status: async () => ({ state: 'none' }),
        start: async () => {
          // A loop that starts again without sleeping would spin here: stop it with an error the test names.
          if (++starts > 100) throw new Error('started 100 times without a wait');
          return 'running';
        },
      }),
      3_000,
    );
    await expect(d.deliver()).rejects.toThrow(/an older attempt's run is still going \(attempt 2 waits for it\)/);
    // The takeover's 1 ms, then one sleep per refused start, doubling from 25 ms to the 1 s cap, the last cut to the deadline.
    expect(d.sleeps).toEqual([1, 25, 50, 100, 200, 400, 800, 1000, 424]);
    // A start after each sleep, the last one refused at the deadline.
    expect(starts).toBe(9);
  });
});
