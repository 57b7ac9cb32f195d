import { keyFromMessageId, payloadDigest, RecordStatus, type IdempotencyStore } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { loadSettings } from '../../src/config/settings';
import { paymentShardsOf, shardTableConnection } from '../../src/app/shardStores';
import { callerOf } from '../../src/http/callerIdentity';
import { PAYMENT_ACCEPTED_CONSUMER, PAYMENTS_API_CONSUMER, paymentsApi, type PaymentQueue } from '../../src/http/paymentsApi';
import { paymentStatus } from '../../src/http/paymentStatus';
import { paymentWebhook } from '../../src/http/paymentWebhook';
import type { PaymentStateTable } from '../../src/http/PaymentStateTable';
import { signatureHeader } from '../../src/http/webhookSignature';
import type { ApiRequest } from '../../src/http/httpTypes';
import { shardOf } from '../../src/payments/shards';
import { routeOf, shardTableEndpointsOf, shardTableEndpointsProblem, type OwnerOf, type ShardRoute } from '../../src/payments/shardTables';
import type { PaymentEvent } from '../../src/http/paymentEvents';
import { inMemoryTelemetry } from '../support/telemetry';

/** Issue 52 item 2: the operator paths (status, the accepted marker, the webhook, the tools) reach a payment's owner shard. */

const A = 'https://sta.table.core.windows.net/';
const B = 'https://stb.table.core.windows.net/';
/** A payment id owned by shard `shard` of `count`. */
const ownedBy = (shard: number, count = 2): string => {
  for (let i = 0; ; i++) if (shardOf(`pay-${i}`, count) === shard) return `pay-${i}`;
};
const settingsOf = (env: Record<string, string>) => loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', ...env });

describe('the shard map (PAYMENT_SHARD_TABLE_ENDPOINTS)', () => {
  test('N entries in shard order, https, or http on a loopback host (Azurite); unset is no map', () => {
    expect(shardTableEndpointsProblem(undefined, 3)).toBeUndefined();
    expect(shardTableEndpointsOf(` ${A} , ${B} `, 2)).toEqual([A, B]);
    expect(shardTableEndpointsOf('http://127.0.0.1:10002/devstoreaccount1,http://localhost:10012/devstoreaccount1', 2)).toHaveLength(2);
    expect(shardTableEndpointsOf(undefined, 2)).toBeUndefined();
  });

  test('refused at start, naming the setting: a wrong count, plain http off loopback, a SAS query, the same account twice, not a URL', () => {
    const refused: Array<[string, number, RegExp]> = [
      [A, 2, /1 table endpoints for 2 shards/],
      [`${A},${B},${A}x`, 2, /3 table endpoints for 2 shards/],
      [`${A},http://stb.table.core.windows.net/`, 2, /shard 1's entry .* must be https/],
      [`${A},${B}?sv=2024&sig=abc`, 2, /no query/],
      [`${A},${A.toUpperCase()}`, 2, /same table endpoint/],
      [`${A},stb`, 2, /not an absolute URL/],
    ];
    for (const [value, count, problem] of refused) {
      expect(shardTableEndpointsProblem(value, count)).toMatch(problem);
      expect(() =>
        settingsOf({ PAYMENT_SHARD_COUNT: String(count), PAYMENT_SHARD_INDEX: '0', PAYMENTS_QUEUE_NAME: 'payments-0', PAYMENT_SHARD_TABLE_ENDPOINTS: value }),
      ).toThrow(/PAYMENT_SHARD_TABLE_ENDPOINTS: /);
    }
    expect(
      settingsOf({ PAYMENT_SHARD_COUNT: '2', PAYMENT_SHARD_INDEX: '1', PAYMENTS_QUEUE_NAME: 'payments-1', PAYMENT_SHARD_TABLE_ENDPOINTS: `${A},${B}` }),
    ).toMatchObject({
      PAYMENT_SHARD_TABLE_ENDPOINTS: `${A},${B}`,
    });
  });

  test('routing: the owner is here, reached through its entry, or misdirected without a map; one shard is always here', () => {
    const p0 = ownedBy(0);
    const p1 = ownedBy(1);
    expect(routeOf(p0, { count: 2, index: 0 }, [A, B])).toEqual({ kind: 'here', shard: 0 });
    expect(routeOf(p1, { count: 2, index: 0 }, [A, B])).toEqual({ kind: 'owner', shard: 1, endpoint: B });
    expect(routeOf(p1, { count: 2, index: 0 }, undefined)).toEqual({ kind: 'misdirected', shard: 1, count: 2, index: 0 });
    expect(routeOf(p1, { count: 1, index: 0 }, undefined)).toEqual({ kind: 'here', shard: 0 });
  });

  test("another shard's account, locally: this app's connection string with the entry as TableEndpoint; in Azure the endpoint and the identity", () => {
    const own = 'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;';
    expect(shardTableConnection(own, 'http://127.0.0.1:10012/devstoreaccount1')).toEqual({
      connectionString: 'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:10012/devstoreaccount1;',
    });
    expect(shardTableConnection(undefined, B)).toEqual({ endpoint: B });
    expect(() => shardTableConnection('UseDevelopmentStorage=true', 'http://127.0.0.1:10012/devstoreaccount1')).toThrow(/AccountName and AccountKey/);
    // Found when the wiring is built (the feature's start), not on a request.
    const local = { PAYMENT_SHARD_COUNT: '2', PAYMENT_SHARD_INDEX: '0', PAYMENTS_QUEUE_NAME: 'payments-0' };
    const map = 'http://127.0.0.1:10002/devstoreaccount1,http://127.0.0.1:10012/devstoreaccount1';
    expect(() => paymentShardsOf(settingsOf({ ...local, PAYMENT_SHARD_TABLE_ENDPOINTS: map }))).toThrow(/AccountName and AccountKey/);
    expect(paymentShardsOf(settingsOf({ ...local, IDEMPOTENCY_TABLE_CONNECTION_STRING: own, PAYMENT_SHARD_TABLE_ENDPOINTS: map })).route(ownedBy(1))).toEqual({
      kind: 'owner',
      shard: 1,
      endpoint: 'http://127.0.0.1:10012/devstoreaccount1',
    });
  });
});

/** Two shards' stores and the resolver shard `index` of 2 builds (with or without the map). */
function twoShards(index: number, withMap = true) {
  const stores = [new InMemoryIdempotencyStore(), new InMemoryIdempotencyStore()];
  const ownerOf: OwnerOf<IdempotencyStore> = (paymentId) => {
    const route = routeOf(paymentId, { count: 2, index }, withMap ? [A, B] : undefined);
    return route.kind === 'misdirected' ? route : stores[route.shard];
  };
  return { stores, ownerOf, here: stores[index] };
}
const get = (paymentId: string): ApiRequest => ({
  method: 'GET',
  url: `https://app/api/payments/${paymentId}`,
  headers: { get: () => null },
  body: Buffer.alloc(0),
});
const json = (answer: { body: Buffer }) => JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;

describe('GET /api/payments/{id} across shards', () => {
  test("shard 0 answers a payment of shard 1 from shard 1's records (its result), not from its own table", async () => {
    const { stores, ownerOf } = twoShards(0);
    const paymentId = ownedBy(1);
    const claim = await stores[1].claim(keyFromMessageId('payments', paymentId), 'd');
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await stores[1].complete(claim.claim, { status: 'succeeded', chargeId: 'ch_1', amount: 5, currency: 'EUR' });
    const answer = await paymentStatus(ownerOf)(get(paymentId));
    expect(answer.status).toBe(200);
    expect(json(answer)).toMatchObject({ paymentId, status: 'succeeded', chargeId: 'ch_1' });
  });

  test('without the map: 421 Misdirected Request naming the owner shard, even when this table holds an accepted marker of it', async () => {
    const { here, ownerOf } = twoShards(0, false);
    const paymentId = ownedBy(1);
    await here.commit({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: paymentId }, 'd', { acceptedAt: '2026-12-04T00:00:00.000Z' });
    const answer = await paymentStatus(ownerOf)(get(paymentId));
    expect(answer.status).toBe(421);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(json(answer)).toMatchObject({ type: '/problems/misdirected-payment', status: 421, paymentId, ownerShard: 1, shardCount: 2 });
    expect(String(json(answer).detail)).toMatch(/belongs to shard 1 of 2, this is shard 0/);
    // Its own payments are answered as before.
    expect((await paymentStatus(ownerOf)(get(ownedBy(0)))).status).toBe(404);
  });
});

class NoQueue implements PaymentQueue {
  readonly sent: string[] = [];
  async send(payment: { paymentId: string }): Promise<void> {
    this.sent.push(payment.paymentId);
  }
}
const post = (payment: object, key: string): ApiRequest => ({
  method: 'POST',
  url: 'https://app/api/payments',
  headers: { get: (name) => ({ 'x-functions-key': 'alice-key', 'idempotency-key': key })[name] ?? null },
  body: Buffer.from(JSON.stringify(payment)),
});

describe('POST /api/payments on a shard that does not own the payment', () => {
  test('the Idempotency-Key record stays here, the accepted marker goes to the owner: the status reads accepted at once, a repeated POST replays', async () => {
    const { stores, ownerOf, here } = twoShards(0);
    const queue = new NoQueue();
    const api = paymentsApi({ store: here, markers: ownerOf, queue, callerIdentity: 'functionKey', telemetry: inMemoryTelemetry().telemetry });
    const paymentId = ownedBy(1);
    const payment = { paymentId, customerId: 'c-1', amount: 100, currency: 'EUR' };
    const first = await api(post(payment, 'k-1'));
    expect(first.status).toBe(202);
    expect(await stores[1].get({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: paymentId })).toMatchObject({ digest: payloadDigest(payment) });
    expect(await here.get({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: paymentId })).toBeUndefined();
    const status = await paymentStatus(ownerOf)(get(paymentId));
    expect(json(status)).toMatchObject({ paymentId, status: 'accepted', acceptedAt: json(first).acceptedAt });
    // The same key again on the same app: the stored 202, replayed; nothing sent again.
    const again = await api(post(payment, 'k-1'));
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.equals(first.body)).toBe(true);
    expect(queue.sent).toEqual([paymentId]);
    // The same key with another body: 422, from this shard's Idempotency-Key record.
    expect((await api(post({ ...payment, amount: 101 }, 'k-1'))).status).toBe(422);
    const idempotencyKey = { consumer: PAYMENTS_API_CONSUMER, key: JSON.stringify([callerOf(post(payment, 'k-1'), 'functionKey'), 'k-1']) };
    expect(await here.get(idempotencyKey)).toMatchObject({ status: RecordStatus.Completed });
    expect(await stores[1].get(idempotencyKey)).toBeUndefined();
  });

  test('without the map: enqueued to the owner as before, no marker anywhere (none of another shard in this table)', async () => {
    const { stores, ownerOf, here } = twoShards(0, false);
    const api = paymentsApi({ store: here, markers: ownerOf, queue: new NoQueue(), callerIdentity: 'functionKey', telemetry: inMemoryTelemetry().telemetry });
    const paymentId = ownedBy(1);
    expect((await api(post({ paymentId, customerId: 'c-1', amount: 100, currency: 'EUR' }, 'k-2'))).status).toBe(202);
    for (const store of stores) expect(await store.get({ consumer: PAYMENT_ACCEPTED_CONSUMER, key: paymentId })).toBeUndefined();
  });
});

describe('the provider webhook on a shard that does not own the payment', () => {
  const SECRET = 'whsec_unit_0123456789abcdef';
  class Rows {
    readonly applied: string[] = [];
    async apply(event: PaymentEvent) {
      this.applied.push(event.id);
      return { kind: 'stale' as const, rowVersion: 0 };
    }
  }
  const webhookOf = (payments: OwnerOf<PaymentStateTable>, store: IdempotencyStore) =>
    paymentWebhook({ store, payments, secrets: [SECRET], toleranceSec: 300, telemetry: inMemoryTelemetry().telemetry });
  const deliver = (paymentId: string): ApiRequest => {
    const body = Buffer.from(
      JSON.stringify({
        id: `evt_${paymentId}`,
        type: 'charge.succeeded',
        created: 1,
        data: { paymentId, chargeId: 'ch', amount: 1, currency: 'EUR', version: 1 },
      }),
    );
    const signature = signatureHeader(SECRET, Math.floor(Date.now() / 1000), body);
    return { method: 'POST', url: 'https://app/api/webhooks/payment-provider', headers: { get: (n) => (n === 'provider-signature' ? signature : null) }, body };
  };
  const rowsResolver = (rows: Rows[], index: number, withMap: boolean): OwnerOf<PaymentStateTable> => {
    return (paymentId) => {
      const route: ShardRoute = routeOf(paymentId, { count: 2, index }, withMap ? [A, B] : undefined);
      return route.kind === 'misdirected' ? route : (rows[route.shard] as unknown as PaymentStateTable);
    };
  };

  test("the Payment row is written to the owner's table; the event id's record stays with the receiver", async () => {
    const rows = [new Rows(), new Rows()];
    const store = new InMemoryIdempotencyStore();
    const paymentId = ownedBy(1);
    expect((await webhookOf(rowsResolver(rows, 0, true), store)(deliver(paymentId))).status).toBe(200);
    expect(rows.map((r) => r.applied)).toEqual([[], [`evt_${paymentId}`]]);
    expect(await store.get({ consumer: 'webhook-payment-provider', key: `evt_${paymentId}` })).toBeDefined();
  });

  test('without the map: 503 (the provider retries), nothing written or stored; the retry after the map is set applies it at the owner', async () => {
    const rows = [new Rows(), new Rows()];
    const store = new InMemoryIdempotencyStore();
    const paymentId = ownedBy(1);
    const refused = await webhookOf(rowsResolver(rows, 0, false), store)(deliver(paymentId));
    expect(refused.status).toBe(503);
    expect(json(refused)).toMatchObject({ type: '/problems/misdirected-payment' });
    expect(rows.map((r) => r.applied)).toEqual([[], []]);
    expect(await store.get({ consumer: 'webhook-payment-provider', key: `evt_${paymentId}` })).toBeUndefined();
    expect((await webhookOf(rowsResolver(rows, 0, true), store)(deliver(paymentId))).status).toBe(200);
    expect(rows[1].applied).toEqual([`evt_${paymentId}`]);
    // Its own payments are applied here as before.
    expect((await webhookOf(rowsResolver(rows, 0, false), store)(deliver(ownedBy(0)))).status).toBe(200);
    expect(rows[0].applied).toEqual([`evt_${ownedBy(0)}`]);
  });
});
