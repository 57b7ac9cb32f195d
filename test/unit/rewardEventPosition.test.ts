import { decodeRewardEvent } from '../../src/rewards/rewardEvent';

/**
 * Issue 44.3: in a dataType 'string' batch the host drops an empty body and keeps its metadata, so
 * `sequenceNumberArray[index]` may be a neighbour's. An event's position (replay or resend) and enqueue time (how long
 * its marker must live) are read only from metadata that lines up with the batch.
 */
const structured = (id: string) =>
  JSON.stringify({
    specversion: '1.0',
    type: 'PaymentSucceeded',
    source: '/payments',
    id,
    data: { paymentId: id, customerId: 'c', amount: 100, currency: 'EUR' },
  });
const meta = (count: number) => ({
  triggerMetadata: {
    partitionContext: { partitionId: '0' },
    sequenceNumberArray: Array.from({ length: count }, (_, i) => 10 + i),
    enqueuedTimeUtcArray: Array.from({ length: count }, (_, i) => new Date(Date.UTC(2026, 11, 1 + i)).toISOString()),
  },
});

test('a structured event of a batch that lines up has its own position and enqueue time', () => {
  const decoded = decodeRewardEvent('rewards', structured('e-2'), 1, meta(2), 2);
  expect(decoded).toMatchObject({ ok: true, event: { position: { partitionId: '0', sequenceNumber: 11 }, enqueuedAtMs: Date.UTC(2026, 11, 2) } });
});

test("a structured event of a batch whose metadata is longer than it (an empty body dropped) gets no neighbour's position", () => {
  const decoded = decodeRewardEvent('rewards', structured('e-2'), 1, meta(3), 2);
  expect(decoded.ok).toBe(true);
  expect(decoded.ok && decoded.event.position).toBeUndefined();
  expect(decoded.ok && decoded.event.enqueuedAtMs).toBeUndefined();
});
