import { Outcome, reportOutcome } from '../../src/messaging';
import { MetricNames } from '../../src/telemetry/Telemetry';
import { inMemoryTelemetry } from '../support/telemetry';

describe('telemetry through in-memory OpenTelemetry exporters', () => {
  test('reportOutcome: each outcome increments its metric and logs key, ids, outcome and digest, never the payload', async () => {
    const t = inMemoryTelemetry();
    const info = { messageId: 'pay-1', deliveryCount: 2, correlationId: 'corr-1' };
    reportOutcome(t.telemetry, { consumer: 'payments', outcome: Outcome.Processed, info, idempotencyKey: 'pay-1', digest: 'd1' });
    reportOutcome(t.telemetry, { consumer: 'payments', outcome: Outcome.Duplicate, info, idempotencyKey: 'pay-1', digest: 'd1', reason: 'completed' });
    reportOutcome(t.telemetry, { consumer: 'payments', outcome: Outcome.Duplicate, info, idempotencyKey: 'pay-1', digest: 'd1', reason: 'cached' });
    reportOutcome(t.telemetry, { consumer: 'payments', outcome: Outcome.KeyReused, info, idempotencyKey: 'pay-1', digest: 'd2' });
    reportOutcome(t.telemetry, { consumer: 'orders', outcome: Outcome.ProcessedAfterTakeover, info, idempotencyKey: 'o-1', attempt: 2 });
    reportOutcome(t.telemetry, { consumer: 'orders', outcome: Outcome.Parked, info, reason: 'invalid-json' });

    expect(await t.counter(MetricNames.claims, { consumer: 'payments' })).toBe(4); // every delivery that reached a claim
    expect(await t.counter(MetricNames.claims, { consumer: 'orders' })).toBe(1);
    expect(await t.counter(MetricNames.takeovers, { consumer: 'orders' })).toBe(1);
    expect(await t.counter(MetricNames.duplicates, { consumer: 'payments' })).toBe(2);
    expect(await t.counter(MetricNames.duplicates, { consumer: 'payments', reason: 'cached' })).toBe(1);
    expect(await t.counter(MetricNames.keyReuse, { consumer: 'payments' })).toBe(1);
    expect(await t.counter(MetricNames.parked, { reason: 'key-reused' })).toBe(1);
    expect(await t.counter(MetricNames.parked, { consumer: 'orders', reason: 'invalid-json' })).toBe(1);

    const logs = t.logs();
    expect(logs).toHaveLength(6);
    expect(logs[1].attributes).toEqual({
      consumer: 'payments',
      outcome: 'duplicate',
      idempotencyKey: 'pay-1',
      messageId: 'pay-1',
      correlationId: 'corr-1',
      deliveryCount: 2,
      digest: 'd1',
      reason: 'completed',
    });
    expect(logs[3].severity).toBe('ERROR');
    await t.shutdown();
  });
});
