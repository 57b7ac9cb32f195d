import { keyFromMessageId, payloadDigest, RecordStatus } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import type { ChargeWorkflow, WorkflowStatus } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { inMemoryTelemetry } from '../support/telemetry';

/**
 * Issue 51 item 4: a delivery takes its lapsed record over (attempt 2) and its start is refused because attempt 1's run
 * is still pending or running (it was started late: a start that outlived the client's deadline). That run is fenced
 * (the record is attempt 2's) and ends answering "not charged: the record moved on". Before the fix the delivery waited
 * for it and wrote that answer to the record: the payment ended `failed`, acknowledged, counted nowhere, alerted by
 * nobody, never charged. Now the delivery waits for the older run to end, then starts its own.
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
