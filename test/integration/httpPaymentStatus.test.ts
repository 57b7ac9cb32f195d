import { keyFromMessageId, payloadDigest, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { RecordingPaymentQueue, startHttpRig } from '../../tools/local/httpRig';
import { useAzurite } from '../support/azurite';

/**
 * `GET /api/payments/{paymentId}`, where the 202 of `POST /api/payments` points, over real HTTP on
 * loopback: answered from the payments consumer's own dedup record.
 */
const azurite = useAzurite();
const KEY = 'alice-function-key-0001';
let rig: Awaited<ReturnType<typeof startHttpRig>>;

beforeEach(async () => {
  rig = await startHttpRig({ tableConnectionString: azurite().connectionString, functionKeys: { alice: KEY }, queue: new RecordingPaymentQueue() });
});
afterEach(async () => {
  await rig.stop();
});

async function get(path: string, key = KEY) {
  const response = await fetch(`${rig.url}${path}`, { headers: key ? { 'x-functions-key': key } : {} });
  const text = await response.text();
  return { status: response.status, headers: Object.fromEntries(response.headers), body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

test('the Location of a 202 answers: 200 accepted (with acceptedAt and Retry-After) while queued, processing while claimed, then the charge result', async () => {
  const payment = { paymentId: 'pay-status-1', customerId: 'c-1', amount: 1250, currency: 'EUR' };
  const accepted = await fetch(`${rig.url}/api/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-functions-key': KEY, 'idempotency-key': 'k-1' },
    body: JSON.stringify(payment),
  });
  expect(accepted.status).toBe(202);
  const location = accepted.headers.get('location')!;
  expect(location).toBe('/api/payments/pay-status-1');

  const queued = await get(location);
  expect(queued.status).toBe(200);
  expect(queued.headers['retry-after']).toBe('2');
  expect(queued.body).toEqual({ paymentId: 'pay-status-1', status: 'accepted', acceptedAt: ((await accepted.json()) as { acceptedAt: string }).acceptedAt });

  // A payment never accepted here is unknown: 404.
  const unknown = await get('/api/payments/pay-never-sent');
  expect(unknown.status).toBe(404);
  expect(unknown.body).toMatchObject({ type: '/problems/payment-not-found' });

  // The payments consumer claims the payment (its record, in the same table) ...
  const consumerStore = new TableIdempotencyStore(rig.idempotencyTable, { retentionMs: 86_400_000 });
  const outcome = await consumerStore.claim(keyFromMessageId('payments', payment.paymentId), payloadDigest(payment));
  if (outcome.kind !== 'claimed') throw new Error(`expected claimed, got ${outcome.kind}`);
  const processing = await get(location);
  expect(processing).toMatchObject({ status: 200, body: { paymentId: 'pay-status-1', status: 'processing', attempt: 1 } });
  expect(processing.headers['retry-after']).toBe('2');

  // ... and completes it with the charge.
  await consumerStore.complete(outcome.claim, { status: 'succeeded', chargeId: 'ch_1', amount: 1250, currency: 'EUR' });
  const done = await get(location);
  expect(done).toMatchObject({ status: 200, body: { paymentId: 'pay-status-1', status: 'succeeded', chargeId: 'ch_1', amount: 1250 } });
  expect(done.headers['retry-after']).toBeUndefined();
});

test('a status request needs a function key (401) and a valid payment id (400)', async () => {
  expect((await get('/api/payments/pay-1', '')).status).toBe(401);
  const bad = await get('/api/payments/pay%20one');
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ type: '/problems/invalid-payment-id' });
});
