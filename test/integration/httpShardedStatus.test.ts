import { TableClient } from '@azure/data-tables';
import { keyFromMessageId, payloadDigest, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { PaymentStateTable } from '../../src/http/PaymentStateTable';
import { signatureHeader } from '../../src/http/webhookSignature';
import { shardOf } from '../../src/payments/shards';
import { RecordingPaymentQueue, startHttpRig } from '../../tools/local/httpRig';
import { AzuriteTable } from '../support/azurite';

/**
 * Issue 52 item 2 on real Azurite: two shards, each its own Azurite (its own account), each app with the map
 * `PAYMENT_SHARD_TABLE_ENDPOINTS` naming both. The status, the accepted marker and the webhook's Payment row of a
 * payment are in its owner's account whichever app is asked; an app without the map answers 421, not 404.
 */
const KEY = 'alice-function-key-0001';
const SECRET = 'whsec_sharded_0123456789abcdef';
let azurites: AzuriteTable[];
let rigs: Array<Awaited<ReturnType<typeof startHttpRig>>>;

/** The first `pay-s<i>` id owned by shard `shard` of 2. */
const ownedBy = (shard: number, prefix = 'pay-s'): string => {
  for (let i = 0; ; i++) if (shardOf(`${prefix}${i}`, 2) === shard) return `${prefix}${i}`;
};
const table = (shard: number, name: string) => TableClient.fromConnectionString(azurites[shard].connectionString, name, { allowInsecureConnection: true });
const records = (shard: number) => new TableIdempotencyStore(table(shard, 'idempotency'), { retentionMs: 86_400_000 });

const startShard = (shard: number, map: boolean) =>
  startHttpRig({
    tableConnectionString: azurites[shard].connectionString,
    // The tables by their own names: each shard is its own Azurite, and the map reaches the other's by name.
    tablePrefix: '',
    functionKeys: { alice: KEY },
    queue: new RecordingPaymentQueue(),
    settings: {
      PAYMENT_SHARD_COUNT: '2',
      PAYMENT_SHARD_INDEX: String(shard),
      PAYMENTS_QUEUE_NAME: `payments-${shard}`,
      WEBHOOK_SIGNING_SECRET: SECRET,
      ...(map ? { PAYMENT_SHARD_TABLE_ENDPOINTS: azurites.map((a) => `http://127.0.0.1:${a.port}/devstoreaccount1`).join(',') } : {}),
    },
  });

beforeAll(async () => {
  azurites = await Promise.all([AzuriteTable.start(), AzuriteTable.start()]);
  rigs = [await startShard(0, true), await startShard(1, true)];
});
afterAll(async () => {
  for (const rig of rigs ?? []) await rig.stop();
  for (const azurite of azurites ?? []) await azurite.stop();
});

async function call(shard: number, path: string, init: RequestInit = {}, rig = rigs[shard]) {
  const response = await fetch(`${rig.url}${path}`, { ...init, headers: { 'x-functions-key': KEY, ...(init.headers as Record<string, string>) } });
  const text = await response.text();
  return { status: response.status, headers: Object.fromEntries(response.headers), body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

test("a payment of shard 1 posted to shard 0: accepted, processing and settled read alike on both apps, from shard 1's account; a repeated POST replays", async () => {
  const paymentId = ownedBy(1);
  const payment = { paymentId, customerId: 'c-1', amount: 1250, currency: 'EUR' };
  const postInit = { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' }, body: JSON.stringify(payment) };
  const accepted = await call(0, '/api/payments', postInit);
  expect(accepted.status).toBe(202);
  const location = accepted.headers.location;
  for (const shard of [0, 1])
    expect(await call(shard, location)).toMatchObject({ status: 200, body: { paymentId, status: 'accepted', acceptedAt: accepted.body!.acceptedAt } });
  // The marker is in the owner's account, not in the account of the app posted to.
  expect(await records(1).get({ consumer: 'http-payments-accepted', key: paymentId })).toBeDefined();
  expect(await records(0).get({ consumer: 'http-payments-accepted', key: paymentId })).toBeUndefined();

  // Shard 1's consumer claims it in its own table, then settles it.
  const outcome = await records(1).claim(keyFromMessageId('payments', paymentId), payloadDigest(payment));
  if (outcome.kind !== 'claimed') throw new Error(`expected claimed, got ${outcome.kind}`);
  for (const shard of [0, 1]) expect(await call(shard, location)).toMatchObject({ status: 200, body: { paymentId, status: 'processing', attempt: 1 } });
  await records(1).complete(outcome.claim, { status: 'succeeded', chargeId: 'ch_1', amount: 1250, currency: 'EUR' });
  for (const shard of [0, 1]) expect(await call(shard, location)).toMatchObject({ status: 200, body: { paymentId, status: 'succeeded', chargeId: 'ch_1' } });

  // The same Idempotency-Key again on the app posted to: the stored 202, replayed; nothing sent again.
  const again = await call(0, '/api/payments', postInit);
  expect(again).toMatchObject({ status: 202, body: accepted.body });
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(rigs[0].queue).toMatchObject({ sent: [{ messageId: paymentId }] });
  // A payment nobody accepted is 404 from its owner's account, asked on either app.
  for (const shard of [0, 1]) expect((await call(shard, `/api/payments/${ownedBy(1, 'pay-none-')}`)).status).toBe(404);
});

test('an app of shard 0 without the map: 421 naming shard 1 for its payment (not 404 from its own table); its own payments as before', async () => {
  const alone = await startShard(0, false);
  try {
    const misdirected = await call(0, `/api/payments/${ownedBy(1)}`, {}, alone);
    expect(misdirected.status).toBe(421);
    expect(misdirected.headers['content-type']).toBe('application/problem+json');
    expect(misdirected.body).toMatchObject({ type: '/problems/misdirected-payment', ownerShard: 1, shardCount: 2 });
    expect((await call(0, `/api/payments/${ownedBy(0, 'pay-none-')}`, {}, alone)).status).toBe(404);
  } finally {
    await alone.stop();
  }
});

test("the provider's event for a payment of shard 1, received by shard 0: its Payment row is in shard 1's account", async () => {
  const paymentId = ownedBy(1, 'pay-hook-');
  const body = JSON.stringify({
    id: `evt_${paymentId}`,
    type: 'charge.succeeded',
    created: 1_767_225_600,
    data: { paymentId, chargeId: `ch_${paymentId}`, amount: 1000, currency: 'EUR', version: 1 },
  });
  const signature = signatureHeader(SECRET, Math.floor(Date.now() / 1000), Buffer.from(body));
  const answer = await call(0, '/api/webhooks/payment-provider', { method: 'POST', headers: { 'provider-signature': signature }, body });
  expect(answer).toMatchObject({ status: 200, body: { received: true, outcome: 'applied' } });
  const clock = { nowMs: () => Date.now() };
  expect(await new PaymentStateTable(table(1, 'paymentstate'), clock).get(paymentId)).toMatchObject({ paymentId, state: 'succeeded', version: 1 });
  expect(await new PaymentStateTable(table(0, 'paymentstate'), clock).get(paymentId)).toBeUndefined();
});
