import { keyFromMessageId, payloadDigest, RecordStatus } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import type { ChargeWorkflow, WorkflowStatus } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { inMemoryTelemetry } from '../support/telemetry';

/**
 * A delivery takes its lapsed record over (attempt 2) and its start is refused because attempt 1's run is still pending
 * or running (it was started late: a start that outlived the client's deadline). That run is fenced (the record is
 * attempt 2's) and ends answering "not charged: the record moved on". Were that answer written to the record, the
 * payment would end `failed`, acknowledged, counted nowhere, alerted by nobody, never charged: the delivery waits for
 * the older run to end, then starts its own.
 */
describe('payments consumer, handoff: a start refused because an older attempt runs', () => {
  const payment = { paymentId: 'pay-refused', customerId: 'cust-1', amount: 1250, currency: 'EUR' };

  test('the delivery waits for the older run to end and starts its own; the older run output never becomes the record', async () => {
    let now = Date.UTC(2026, 0, 1);
    const clock = { nowMs: () => now };
    const store = new InMemoryIdempotencyStore({ clock, leaseMs: 30_000 });
    const key = keyFromMessageId('payments', payment.paymentId);
    // Delivery 1 claimed (attempt 1) and died while its start was on its way; the lease lapsed.
    await store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
    now += 60_000;

    const fenced: WorkflowStatus = {
      state: 'completed',
      output: { status: 'failed', reason: 'not charged: the record moved on (IN_PROGRESS, attempt 2) before this call of attempt 1' },
    };
    // The trigger's look finds no run; attempt 1's start lands right after; attempt 2's start is refused; the run ends fenced.
    const statuses: WorkflowStatus[] = [{ state: 'none' }, { state: 'running' }, fenced];
    const starts: ChargeOrchestrationInput[] = [];
    const workflow: ChargeWorkflow = {
      status: async () => statuses.shift() ?? fenced,
      start: async (_instanceId, input) => {
        starts.push(input);
        return starts.length === 1 ? 'running' : 'started';
      },
    };
    const t = inMemoryTelemetry();
    const consumer = new PaymentsConsumer({
      store,
      parking: { park: async () => undefined } as unknown as ParkingStore,
      telemetry: t.telemetry,
      clock,
      sleep: async (ms) => void (now += ms),
      waitBudgetMs: 60_000,
      design: 'handoff',
    }).withWorkflow(workflow);

    const result = await consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 2 });

    expect(result).toMatchObject({ outcome: 'handedOff', attempt: 2 });
    expect(starts.map((s) => s.attempt)).toEqual([2, 2]);
    const record = await store.get(key);
    // The record waits for attempt 2's own run: in progress, not `failed` from a run that was fenced.
    expect(record).toMatchObject({ status: RecordStatus.InProgress, attempt: 2 });
    expect(record?.result).toBeUndefined();
  });

  test('past its deadline with the older run still going, the delivery asks for redelivery and leaves the record in progress', async () => {
    let now = Date.UTC(2026, 0, 1);
    const clock = { nowMs: () => now };
    const store = new InMemoryIdempotencyStore({ clock, leaseMs: 30_000 });
    const key = keyFromMessageId('payments', payment.paymentId);
    await store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
    now += 60_000;
    let statusReads = 0;
    const workflow: ChargeWorkflow = {
      status: async () => (statusReads++ === 0 ? { state: 'none' } : { state: 'running' }),
      start: async () => 'running',
    };
    const consumer = new PaymentsConsumer({
      store,
      parking: { park: async () => undefined } as unknown as ParkingStore,
      telemetry: inMemoryTelemetry().telemetry,
      clock,
      sleep: async (ms) => void (now += ms),
      waitBudgetMs: 10_000,
      design: 'handoff',
    }).withWorkflow(workflow);

    await expect(consumer.handle(payment, { messageId: payment.paymentId, deliveryCount: 2 })).rejects.toThrow(/an older attempt's run is still going/);
    expect(await store.get(key)).toMatchObject({ status: RecordStatus.InProgress, attempt: 2 });
  });
});

/**
 * handOffWhenFree's wait (src/payments/PaymentsConsumer.ts) against a workflow that behaves as the task
 * hub does: a start is refused while the older attempt's run is in flight, and the delivery's own clock moves only by
 * its sleeps. The tests above script one refusal; these hold the wait's loop to its rule: poll the older run's
 * status with a growing backoff and start only once it no longer runs, and always sleep between refused starts.
 */
describe('handOffWhenFree: waiting for an older attempt’s run', () => {
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
