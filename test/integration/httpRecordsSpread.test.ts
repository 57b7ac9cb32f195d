import { createHash } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { PAYMENTS_API_CONSUMER } from '../../src/http/paymentsApi';
import { WEBHOOK_CONSUMER } from '../../src/http/paymentWebhook';
import { signatureHeader } from '../../src/http/webhookSignature';
import { shardOf } from '../../src/payments/shards';
import { RecordingPaymentQueue, startHttpRig } from '../../tools/local/httpRig';
import { AzuriteTable } from '../support/azurite';

/**
 * Issue 63 on real Azurite: the webhook's event-id records and the API's Idempotency-Key records do not all land on
 * the account of the app that receives them (the provider and the callers use one URL: shard 0's). Two shards, each
 * its own Azurite, each app with the map of both: every record is in the account its own key hashes to, whichever app
 * received it, and a retry sent to the other app finds it there (a duplicate, not a second event or payment).
 */
const KEY = 'alice-function-key-0001';
const SECRET = 'whsec_spread_0123456789abcdef';
let azurites: AzuriteTable[];
let rigs: Array<Awaited<ReturnType<typeof startHttpRig>>>;
const queues = [new RecordingPaymentQueue(), new RecordingPaymentQueue()];

const records = (shard: number) =>
  new TableIdempotencyStore(TableClient.fromConnectionString(azurites[shard].connectionString, 'idempotency', { allowInsecureConnection: true }), {
    retentionMs: 86_400_000,
  });

beforeAll(async () => {
  azurites = await Promise.all([AzuriteTable.start(), AzuriteTable.start()]);
  const endpoints = azurites.map((a) => `http://127.0.0.1:${a.port}/devstoreaccount1`).join(',');
  rigs = [];
  for (const shard of [0, 1])
    rigs.push(
      await startHttpRig({
        tableConnectionString: azurites[shard].connectionString,
        tablePrefix: '',
        functionKeys: { alice: KEY },
        queue: queues[shard],
        settings: {
          PAYMENT_SHARD_COUNT: '2',
          PAYMENT_SHARD_INDEX: String(shard),
          PAYMENTS_QUEUE_NAME: `payments-${shard}`,
          WEBHOOK_SIGNING_SECRET: SECRET,
          PAYMENT_SHARD_TABLE_ENDPOINTS: endpoints,
        },
      }),
    );
});
afterAll(async () => {
  for (const rig of rigs ?? []) await rig.stop();
  for (const azurite of azurites ?? []) await azurite.stop();
});

async function post(shard: number, path: string, body: string, headers: Record<string, string>) {
  const response = await fetch(`${rigs[shard].url}${path}`, { method: 'POST', headers: { 'x-functions-key': KEY, ...headers }, body });
  return { status: response.status, replayed: response.headers.get('idempotent-replayed'), body: (await response.json()) as Record<string, unknown> };
}

const event = (i: number) =>
  JSON.stringify({
    id: `evt_spread_${i}`,
    type: 'charge.succeeded',
    created: 1_767_225_600,
    data: { paymentId: `pay-spread-${i}`, chargeId: `ch_${i}`, amount: 1000 + i, currency: 'EUR', version: 1 },
  });
const webhook = (shard: number, i: number) =>
  post(shard, '/api/webhooks/payment-provider', event(i), {
    'provider-signature': signatureHeader(SECRET, Math.floor(Date.now() / 1000), Buffer.from(event(i))),
  });

test("every webhook sent to shard 0: each event id's record is in the account its id hashes to, both accounts used; the same event at shard 1 is a duplicate", async () => {
  const ids = Array.from({ length: 16 }, (_, i) => i);
  for (const i of ids) expect(await webhook(0, i)).toMatchObject({ status: 200, body: { outcome: 'applied' } });
  const where = await Promise.all(
    ids.map(async (i) => {
      const key = { consumer: WEBHOOK_CONSUMER, key: `evt_spread_${i}` };
      const [a, b] = [await records(0).get(key), await records(1).get(key)];
      return { i, owner: shardOf(key.key, 2), in: [a !== undefined, b !== undefined] };
    }),
  );
  for (const w of where) expect(w.in).toEqual([w.owner === 0, w.owner === 1]); // exactly one account: its key's
  expect(new Set(where.map((w) => w.owner))).toEqual(new Set([0, 1]));
  // The provider retries an event at the other app (or after a failover): its record is found, nothing applied twice.
  const retried = await webhook(
    1,
    ids.find((i) => where[i].owner === 0)!,
  );
  expect(retried).toMatchObject({ status: 200, replayed: 'true' }); // the stored answer, replayed from the owner's account
});

test('every POST /api/payments to shard 0: each Idempotency-Key record in the account its key hashes to; a retry at shard 1 replays the stored answer', async () => {
  const keys = Array.from({ length: 12 }, (_, i) => `idem-spread-${i}`);
  const body = (i: number) => JSON.stringify({ paymentId: `pay-api-spread-${i}`, customerId: 'c-1', amount: 500 + i, currency: 'EUR' });
  const first = [];
  for (const [i, k] of keys.entries()) first.push(await post(0, '/api/payments', body(i), { 'content-type': 'application/json', 'idempotency-key': k }));
  for (const answer of first) expect(answer.status).toBe(202);
  const owners = await Promise.all(
    keys.map(async (k) => {
      const caller = `key:${createHash('sha256').update(KEY, 'utf8').digest('hex').slice(0, 32)}`; // src/http/callerIdentity.ts
      const key = { consumer: PAYMENTS_API_CONSUMER, key: JSON.stringify([caller, k]) };
      const found = [(await records(0).get(key)) !== undefined, (await records(1).get(key)) !== undefined];
      expect(found.filter(Boolean)).toHaveLength(1);
      return found[0] ? 0 : 1;
    }),
  );
  expect(new Set(owners)).toEqual(new Set([0, 1]));
  const again = await post(1, '/api/payments', body(0), { 'content-type': 'application/json', 'idempotency-key': keys[0] });
  expect(again).toMatchObject({ status: 202, replayed: 'true', body: first[0].body });
  expect(queues[1].sent).toHaveLength(0); // nothing sent again
  expect(queues[0].sent).toHaveLength(keys.length);
});
