/**
 * The payments trigger's handler (src/app/paymentsHandler.ts), in memory. A delivery reaches the consumer with its trigger metadata, its log lines reach the
 * invocation's log, and a store outage is waited out inside the invocation with the lines and the count an operator
 * reads (a warning at the first wait, info on recovery, an error when it gives up).
 */
import type { InvocationContext } from '@azure/functions';
import { StoreUnavailableError } from 'azure-functions-idempotency';
import { makePaymentsHandler, outageReport } from '../../src/app/paymentsHandler';
import { ShardLayoutRefusedError } from '../../src/app/shardLayoutGate';
import type { ChargeWorkflow } from '../../src/payments/ChargeWorkflow';
import type { PaymentsConsumer } from '../../src/payments/PaymentsConsumer';
import { inMemoryTelemetry } from '../support/telemetry';

const workflow: ChargeWorkflow = { status: async () => ({ state: 'none' }), start: async () => 'started' };

function contextOf(triggerMetadata: Record<string, unknown>) {
  const lines: Array<[string, string, unknown]> = [];
  const context = {
    triggerMetadata,
    info: (message: string, fields: unknown) => lines.push(['info', message, fields]),
    warn: (message: string, fields: unknown) => lines.push(['warn', message, fields]),
    error: (message: string, fields: unknown) => lines.push(['error', message, fields]),
  } as unknown as InvocationContext;
  return { context, lines };
}

/** A consumer whose `handle` answers with `answers` in turn (an error is thrown), recording what it was given. */
function fakeConsumer(answers: unknown[]) {
  const calls: Array<{ body: unknown; info: unknown; workflow?: ChargeWorkflow }> = [];
  let workflowSet: ChargeWorkflow | undefined;
  const consumer = {
    withWorkflow(w: ChargeWorkflow) {
      workflowSet = w;
      return consumer;
    },
    async handle(body: unknown, info: unknown, telemetry: { log: (level: 'info', message: string) => void }) {
      calls.push({ body, info, workflow: workflowSet });
      telemetry.log('info', 'payments: handled');
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { consumer: consumer as unknown as PaymentsConsumer, calls };
}

describe('makePaymentsHandler', () => {
  test('hands the body and the trigger metadata to the consumer driving the invocation’s workflow; its log lines reach the invocation’s log', async () => {
    const t = inMemoryTelemetry();
    const { consumer, calls } = fakeConsumer([{ outcome: 'handedOff', instanceId: 'payment-x', attempt: 1 }]);
    const { context, lines } = contextOf({ messageId: 'pay-1', deliveryCount: 2, correlationId: 'corr-1' });
    const handler = makePaymentsHandler({ consumer: () => consumer, telemetry: () => t.telemetry, workflow: () => workflow });
    await expect(handler({ paymentId: 'pay-1' }, context)).resolves.toEqual({ outcome: 'handedOff', instanceId: 'payment-x', attempt: 1 });
    expect(calls).toEqual([
      { body: { paymentId: 'pay-1' }, info: expect.objectContaining({ messageId: 'pay-1', deliveryCount: 2, correlationId: 'corr-1' }), workflow },
    ]);
    expect(lines).toEqual([['info', 'payments: handled', {}]]);
    await t.shutdown();
  });

  test('without a ride-out plan the first store failure abandons the message, in silence (no outage lines)', async () => {
    const t = inMemoryTelemetry();
    const { consumer, calls } = fakeConsumer([new StoreUnavailableError('store down', 'claim'), { outcome: 'duplicate' }]);
    const { context } = contextOf({ messageId: 'pay-2', deliveryCount: 1 });
    const handler = makePaymentsHandler({ consumer: () => consumer, telemetry: () => t.telemetry, workflow: () => workflow, sleep: async () => undefined });
    await expect(handler({}, context)).rejects.toThrow('store down');
    expect(calls).toHaveLength(1);
    expect(t.logs().filter((l) => String(l.attributes.outcome ?? '').startsWith('store-outage'))).toEqual([]);
    expect(await t.counter('messages.store_outage.waits')).toBe(0);
    await t.shutdown();
  });

  test('with a plan the outage is waited out in the invocation: one warning, one count a wait, an info line on recovery, fields naming the message', async () => {
    const t = inMemoryTelemetry();
    let now = 1_000;
    const { consumer, calls } = fakeConsumer([
      new StoreUnavailableError('down 1', 'claim'),
      new StoreUnavailableError('down 2', 'claim'),
      { outcome: 'duplicate' },
    ]);
    const { context } = contextOf({ messageId: 7, deliveryCount: 3 });
    const handler = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => t.telemetry,
      workflow: () => workflow,
      rideOut: { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 15_000 },
      nowMs: () => now,
      sleep: async (ms) => void (now += ms),
    });
    await expect(handler({}, context)).resolves.toEqual({ outcome: 'duplicate' });
    expect(calls).toHaveLength(3);
    expect(await t.counter('messages.store_outage.waits', { consumer: 'payments' })).toBe(2);
    const outage = t.logs().filter((l) => String(l.attributes.outcome ?? '').startsWith('store-outage'));
    expect(outage.map((l) => [l.severity, l.body, l.attributes])).toEqual([
      [
        'WARN',
        'payments: the store does not answer (down 1); the delivery waits for it, its lock renewed',
        { consumer: 'payments', messageId: '7', deliveryCount: 3, outcome: 'store-outage-wait', delayMs: 1_000 },
      ],
      [
        'INFO',
        'payments: the store answers again after 3000 ms (2 waits)',
        { consumer: 'payments', messageId: '7', deliveryCount: 3, outcome: 'store-outage-recovered', waitedMs: 3_000 },
      ],
    ]);
    await t.shutdown();
  });

  test('a message id as text is in the fields as it is', async () => {
    const t = inMemoryTelemetry();
    const { consumer } = fakeConsumer([new StoreUnavailableError('down', 'claim'), { outcome: 'duplicate' }]);
    const { context } = contextOf({ messageId: 'pay-text' });
    let now = 0;
    const handler = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => t.telemetry,
      workflow: () => workflow,
      rideOut: { budgetMs: 60_000, firstDelayMs: 500, maxDelayMs: 500 },
      nowMs: () => now,
      sleep: async (ms) => void (now += ms),
    });
    await handler({}, context);
    expect(t.logs().find((l) => l.attributes.outcome === 'store-outage-wait')?.attributes.messageId).toBe('pay-text');
    await t.shutdown();
  });

  test('a message id that is neither text nor a number is left out of the fields', async () => {
    const t = inMemoryTelemetry();
    const { consumer } = fakeConsumer([new StoreUnavailableError('down', 'claim'), { outcome: 'duplicate' }]);
    const { context } = contextOf({ messageId: { odd: true } });
    let now = 0;
    const handler = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => t.telemetry,
      workflow: () => workflow,
      rideOut: { budgetMs: 60_000, firstDelayMs: 500, maxDelayMs: 500 },
      nowMs: () => now,
      sleep: async (ms) => void (now += ms),
    });
    await handler({}, context);
    const wait = t.logs().find((l) => l.attributes.outcome === 'store-outage-wait');
    expect(wait?.attributes).toEqual({ consumer: 'payments', outcome: 'store-outage-wait', delayMs: 500 });
    await t.shutdown();
  });
});

describe('outageReport', () => {
  test('a warning at the first wait only; an error when it gives up, with the cause cut to 300 characters', async () => {
    const t = inMemoryTelemetry();
    const report = outageReport(t.telemetry, { consumer: 'payments', messageId: 'pay-3' });
    report.waiting(1, 1_000, new StoreUnavailableError('first', 'claim'));
    report.waiting(2, 2_000, new StoreUnavailableError('second', 'claim'));
    report.gaveUp(2, 240_000, new StoreUnavailableError('x'.repeat(400), 'claim'));
    expect(await t.counter('messages.store_outage.waits', { consumer: 'payments' })).toBe(2);
    expect(t.logs().map((l) => [l.severity, l.attributes.outcome])).toEqual([
      ['WARN', 'store-outage-wait'],
      ['ERROR', 'store-outage-abandoned'],
    ]);
    const gaveUp = t.logs()[1];
    expect(gaveUp.body).toBe(`payments: the store did not answer within 240000 ms (2 waits): abandoned, one delivery spent`);
    expect(gaveUp.attributes).toEqual({ consumer: 'payments', messageId: 'pay-3', outcome: 'store-outage-abandoned', reason: 'x'.repeat(300) });
    await t.shutdown();
  });
});

describe('a shard layout refused (the table holds a payment of another shard): never claimed', () => {
  const refusal = () => new ShardLayoutRefusedError({ count: 2, index: 0 }, [{ paymentId: 'pay-9', status: 'IN_PROGRESS', owner: 1 }] as never);
  const handedOff = { outcome: 'handedOff', instanceId: 'payment-x', attempt: 1 };

  test('waited out once inside the invocation (the ride-out budget), then asked again: a layout fixed meanwhile lets the delivery through; still refused, thrown', async () => {
    const t = inMemoryTelemetry();
    let refusals = 0;
    const slept: number[] = [];
    const { consumer, calls } = fakeConsumer([handedOff, handedOff]);
    const handler = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => t.telemetry,
      workflow: () => workflow,
      rideOut: { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 15_000 },
      sleep: async (ms) => void slept.push(ms),
      layoutGate: async () => {
        if (refusals-- > 0) throw refusal();
      },
    });
    const { context } = contextOf({ messageId: 'pay-1', deliveryCount: 1 });
    await expect(handler({ paymentId: 'pay-1' }, context)).resolves.toEqual(handedOff);
    expect(slept).toEqual([]); // the layout accepted: no wait
    refusals = 1;
    await expect(handler({ paymentId: 'pay-1' }, context)).resolves.toEqual(handedOff);
    expect(slept).toEqual([60_000]);
    expect(calls).toHaveLength(2);
    refusals = 2;
    await expect(handler({ paymentId: 'pay-1' }, context)).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    expect(slept).toEqual([60_000, 60_000]);
    expect(calls).toHaveLength(2);
    await t.shutdown();
  });

  test('without a ride-out budget: thrown at once (no wait); the wait is real time by default', async () => {
    const t = inMemoryTelemetry();
    const { consumer, calls } = fakeConsumer([handedOff]);
    const { context } = contextOf({ messageId: 'pay-1', deliveryCount: 1 });
    const slept: number[] = [];
    const refused = async () => {
      throw refusal();
    };
    const noBudget = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => t.telemetry,
      workflow: () => workflow,
      sleep: async (ms) => void slept.push(ms),
      layoutGate: refused,
    });
    await expect(noBudget({ paymentId: 'pay-1' }, context)).rejects.toBeInstanceOf(ShardLayoutRefusedError);
    expect(slept).toEqual([]);
    let refusals = 1;
    const realTime = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => t.telemetry,
      workflow: () => workflow,
      rideOut: { budgetMs: 200, firstDelayMs: 100, maxDelayMs: 100 },
      layoutGate: async () => {
        if (refusals-- > 0) throw refusal();
      },
    });
    const startedAt = performance.now();
    await expect(realTime({ paymentId: 'pay-1' }, context)).resolves.toEqual(handedOff);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(190);
    expect(calls).toHaveLength(1);
    await t.shutdown();
  });
});
