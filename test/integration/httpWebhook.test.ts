import { signatureHeader } from '../../src/http/webhookSignature';
import { startHttpRig } from '../../tools/local/httpRig';
import { useAzurite } from '../support/azurite';

/**
 * `POST /api/webhooks/payment-provider` over real HTTP on loopback (the local host), the event ids and
 * Payment rows on Azurite: signatures, dedup by event id, convergence by version.
 */
const azurite = useAzurite();
const SECRET = 'whsec_integration_0123456789abcdef';

let rig: Awaited<ReturnType<typeof startHttpRig>>;
let logLines: string[];
let n = 0;

beforeEach(async () => {
  logLines = [];
  rig = await startHttpRig({
    tableConnectionString: azurite().connectionString,
    settings: { WEBHOOK_SIGNING_SECRET: SECRET, WEBHOOK_TOLERANCE_SECONDS: '300' },
    leaseMs: 2_000,
    log: (_name, level, message) => logLines.push(`${level} ${message}`),
  });
});
afterEach(async () => {
  await rig.stop();
});

const nowSec = () => Math.floor(Date.now() / 1000);

function event(paymentId: string, version: number, overrides: Record<string, unknown> = {}) {
  const type = version === 1 ? 'charge.succeeded' : 'charge.refunded';
  return {
    id: `evt_${paymentId}_${version}`,
    type,
    // Fixed per event: a redelivery is the same bytes (a new `created` would be another body: 422).
    created: 1_767_225_600 + version,
    data: { paymentId, chargeId: `ch_${paymentId}`, amount: 1000, currency: 'EUR', version, refundedAmount: version === 1 ? 0 : 100 * (version - 1) },
    ...overrides,
  };
}

async function deliver(body: unknown, sign: { secret?: string; t?: number; header?: string | null } = {}) {
  const raw = Buffer.from(JSON.stringify(body));
  const header = sign.header !== undefined ? sign.header : signatureHeader(sign.secret ?? SECRET, sign.t ?? nowSec(), raw);
  const response = await fetch(`${rig.url}/api/webhooks/payment-provider`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(header === null ? {} : { 'provider-signature': header }) },
    body: raw,
  });
  return { status: response.status, headers: Object.fromEntries(response.headers), bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('POST /api/webhooks/payment-provider over HTTP', () => {
  test('webhook: a signed event is applied to the Payment row; its redelivery is replayed byte for byte and changes nothing', async () => {
    const paymentId = `pay-w${++n}`;
    const first = await deliver(event(paymentId, 1));
    expect(first.status).toBe(200);
    expect(JSON.parse(first.bytes.toString())).toEqual({ received: true, eventId: `evt_${paymentId}_1`, outcome: 'applied' });
    const row = await rig.paymentState.get(paymentId);
    expect(row).toMatchObject({ paymentId, state: 'succeeded', version: 1, chargeId: `ch_${paymentId}` });
    const again = await deliver(event(paymentId, 1));
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(await rig.paymentState.get(paymentId)).toEqual(row);
  });

  test('webhook: out-of-order deliveries converge to the newest version (an older one is stale and changes nothing)', async () => {
    const paymentId = `pay-w${++n}`;
    expect(JSON.parse((await deliver(event(paymentId, 2))).bytes.toString())).toMatchObject({ outcome: 'applied' });
    expect(JSON.parse((await deliver(event(paymentId, 1))).bytes.toString())).toMatchObject({ outcome: 'stale' });
    expect(await rig.paymentState.get(paymentId)).toMatchObject({ state: 'refunded', version: 2, refundedAmount: 100 });
  });

  test('webhook: versions 1-4 delivered shuffled, three times each, concurrently, leave the row at version 4', async () => {
    const paymentId = `pay-w${++n}`;
    const deliveries = [1, 2, 3, 4, 4, 3, 2, 1, 2, 4, 1, 3].map((v) => deliver(event(paymentId, v)));
    const answers = await Promise.all(deliveries);
    for (const a of answers) expect([200, 409]).toContain(a.status);
    // The provider retries the 409s.
    for (const [i, a] of answers.entries())
      if (a.status === 409) expect((await deliver(event(paymentId, [1, 2, 3, 4, 4, 3, 2, 1, 2, 4, 1, 3][i]))).status).toBe(200);
    expect(await rig.paymentState.get(paymentId)).toMatchObject({ version: 4, state: 'refunded', refundedAmount: 300, lastEventId: `evt_${paymentId}_4` });
  });

  test('webhook: bad, tampered, stale, missing and malformed signatures are refused (403/400) and logged without the payload', async () => {
    const paymentId = `pay-secret-marker-${++n}`;
    const body = event(paymentId, 1);
    expect((await deliver(body, { secret: 'not-the-secret-0123456789' })).status).toBe(403);
    const raw = Buffer.from(JSON.stringify(body));
    const tampered = await deliver({ ...body, data: { ...body.data, amount: 1 } }, { header: signatureHeader(SECRET, nowSec(), raw) });
    expect(tampered.status).toBe(403);
    expect((await deliver(body, { t: nowSec() - 301 })).status).toBe(400);
    expect((await deliver(body, { header: null })).status).toBe(400);
    expect((await deliver(body, { header: 't=now,v1=zz' })).status).toBe(400);
    expect(await rig.paymentState.get(paymentId)).toBeUndefined();
    const refusals = logLines.filter((l) => l.includes('signature refused'));
    expect(refusals).toHaveLength(5);
    expect(refusals.join('\n')).toMatch(/bodyDigest/);
    expect(logLines.join('\n')).not.toContain('secret-marker');
  });

  test('webhook: the same event id with another body is 422; a signed body that is not an event is 400', async () => {
    const paymentId = `pay-w${++n}`;
    expect((await deliver(event(paymentId, 1))).status).toBe(200);
    expect((await deliver(event(paymentId, 1, { created: 1 }))).status).toBe(422);
    expect((await deliver({ hello: 'world' })).status).toBe(400);
  });
});
