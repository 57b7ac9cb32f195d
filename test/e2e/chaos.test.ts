import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runChaos, type ChaosReport } from '../../tools/demo/chaos';

/**
 * The whole payments path under chaos: a local Service Bus with 8 competing receivers, 30 %
 * producer duplicates, 5 % crashes at each injection point (before/after the claim, after the
 * provider charged, before completing, ack lost), 1 % slow handlers (lock lost), provider faults
 * at 5 % each, two storage outages; the real handler on Azurite and the fake provider.
 * Measured on the loaded 2-core build machine: 2,000 messages took 53 s alone, 59-90 s inside `npm test` under load: scaled to 1,500 to stay in 60-90 s.
 */
describe('chaos: the payments consumer under duplicates, crashes, lock loss, provider faults and storage outages', () => {
  let report: ChaosReport;

  beforeAll(async () => {
    report = await runChaos({ messages: 1_500, duplicateRate: 0.3, crashRate: 0.05, consumers: 8, seed: 42 });
  }, 240_000);

  test('chaos: every chargeable payment is charged exactly once (the provider counts), none twice', () => {
    expect(report.crashesInjected).toBeGreaterThan(100);
    expect(report.duplicatesDelivered).toBeGreaterThan(500);
    expect(report.doubleCharged).toBe(0);
    // Chargeable = valid, not declined, not a reused key. Only a dead-lettered, uncharged one may be missing.
    const details = report.parts[0]!.details as { chargeable: number; chargeableAwaitingOperator: number };
    expect(report.effectiveChargesSource).toBe('fake-provider');
    expect(report.effectiveCharges).toBe(details.chargeable - details.chargeableAwaitingOperator);
    expect(details.chargeableAwaitingOperator).toBeLessThanOrEqual(report.deadLettered);
  });

  test('chaos: nothing is lost; dead-lettered messages are reported with their reason', () => {
    expect(report.lost).toBe(0);
    expect(report.deadLetteredMessages.every((d) => d.reason === 'MaxDeliveryCountExceeded' && d.lastError !== '')).toBe(true);
    expect(report.deadLettered).toBe(report.deadLetteredMessages.length);
  });

  test('chaos: every reused-key and malformed message is parked with its reason; no invariant fails', () => {
    const details = report.parts[0]!.details as { reusedKeys: number; malformed: number };
    expect(details.reusedKeys).toBeGreaterThan(10);
    // Parked rows are per (MessageId, body): one per reused-key message unless it only sits in the DLQ.
    expect(report.parkedByReason['payments:key-reused']).toBeGreaterThanOrEqual(details.reusedKeys - report.deadLettered);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});

describe('chaos: the checks catch a broken system', () => {
  test('chaos: a provider that ignores Idempotency-Key double-charges under crashes, and the run fails with doubleCharged > 0', async () => {
    // Charges every call anew: a replayed activity (Durable host crash after the charge) charges again.
    const charges: Array<{ paymentId: string; amount: number }> = [];
    const server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/__stats') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ charges }));
      let text = '';
      req.on('data', (c: Buffer) => (text += String(c)));
      req.on('end', () => {
        const body = JSON.parse(text) as { paymentId: string; customerId: string; amount: number; currency: string };
        if (body.customerId.startsWith('decline')) return void res.writeHead(402, { 'content-type': 'application/json' }).end('{"reason":"card_declined"}');
        charges.push({ paymentId: body.paymentId, amount: body.amount });
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `ch_${charges.length}`, amount: body.amount, currency: body.currency, status: 'succeeded' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const report = await runChaos({ messages: 150, crashRate: 0.1, consumers: 4, seed: 3, outages: 0, providerUrl: `http://127.0.0.1:${port}` });
      expect(report.effectiveChargesSource).toBe('external-stats');
      expect(report.doubleCharged).toBeGreaterThan(0);
      expect(report.ok).toBe(false);
      expect(report.violations.join('\n')).toMatch(/charged twice/);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);
});
