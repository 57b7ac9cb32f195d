import { signatureHeader } from '../../src/http/webhookSignature';
import { StorageTrafficCounter } from '../../tools/bench/StorageTrafficCounter';
import { RecordingPaymentQueue, startHttpRig } from '../../tools/local/httpRig';
import { EDGE_REQUESTS_PER_PAYMENT } from '../../tools/sizing/paymentLoad';
import { useAzurite } from '../support/azurite';

/**
 * The sizing's count of a payment's requests on the account holding the HTTP records (issue 63,
 * tools/sizing/paymentLoad.ts `EDGE_REQUESTS_PER_PAYMENT`), counted on the wire against Azurite: `POST /api/payments`
 * (its Idempotency-Key record and the `accepted` marker) and the provider's webhook (the event id's record and the
 * Payment row), fresh keys, caches cold for them, after a warm-up that created the tables.
 */
const azuriteOf = useAzurite();
const KEY = 'alice-function-key-0001';
const SECRET = 'whsec_edge_0123456789abcdef';

test('a payment through the API and its webhook makes EDGE_REQUESTS_PER_PAYMENT table requests on that account', async () => {
  const counter = await StorageTrafficCounter.start(azuriteOf().connectionString);
  const rig = await startHttpRig({
    tableConnectionString: counter.connectionString,
    functionKeys: { alice: KEY },
    queue: new RecordingPaymentQueue(),
    settings: { WEBHOOK_SIGNING_SECRET: SECRET },
  });
  try {
    const pay = async (i: number) => {
      const payment = JSON.stringify({ paymentId: `pay-edge-${i}`, customerId: 'c-1', amount: 100 + i, currency: 'EUR' });
      const api = await fetch(`${rig.url}/api/payments`, {
        method: 'POST',
        headers: { 'x-functions-key': KEY, 'content-type': 'application/json', 'idempotency-key': `edge-${i}` },
        body: payment,
      });
      expect(api.status).toBe(202);
      const event = JSON.stringify({
        id: `evt_edge_${i}`,
        type: 'charge.succeeded',
        created: 1_767_225_600,
        data: { paymentId: `pay-edge-${i}`, chargeId: `ch_${i}`, amount: 100 + i, currency: 'EUR', version: 1 },
      });
      const hook = await fetch(`${rig.url}/api/webhooks/payment-provider`, {
        method: 'POST',
        headers: { 'provider-signature': signatureHeader(SECRET, Math.floor(Date.now() / 1000), Buffer.from(event)) },
        body: event,
      });
      expect(hook.status).toBe(200);
    };
    await pay(0); // warm-up: the tables exist after it
    const total = (counts: ReturnType<StorageTrafficCounter['snapshot']>) =>
      Object.entries(counts.requests)
        .filter(([key]) => key.startsWith('table.'))
        .reduce((a, [, n]) => a + n, 0);
    const before = total(counter.snapshot());
    const payments = 10;
    for (let i = 1; i <= payments; i++) await pay(i);
    const perPayment = (total(counter.snapshot()) - before) / payments;
    console.log(`HTTP records: ${perPayment} table requests a payment (API + webhook); ${JSON.stringify(counter.snapshot().requests)}`);
    expect(perPayment).toBe(EDGE_REQUESTS_PER_PAYMENT);
  } finally {
    await rig.stop();
    await counter.stop();
  }
});
