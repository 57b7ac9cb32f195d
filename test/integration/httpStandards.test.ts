import { request as httpRequest } from 'node:http';
import { signatureHeader } from '../../src/http/webhookSignature';
import { RecordingPaymentQueue, startHttpRig } from '../../tools/local/httpRig';
import { useAzurite } from '../support/azurite';

/**
 * The HTTP functions as RFC 9110 and the Idempotency-Key draft (draft-ietf-httpapi-idempotency-key-header)
 * say, over real HTTP on loopback (the local host), records on Azurite: one Idempotency-Key field, 405 with
 * `Allow`, 401 only with a challenge, unknown signed webhook events acknowledged, the 202's Location answering.
 */
const azurite = useAzurite();
const KEY = 'alice-function-key-0001';
const SECRET = 'whsec_standards_0123456789abcdef';
const PREVIOUS = 'whsec_previous_0123456789abcdef';

let rig: Awaited<ReturnType<typeof startHttpRig>>;
let queue: RecordingPaymentQueue;
let logLines: string[];
let n = 0;

async function start(settings: Record<string, string> = {}) {
  queue = new RecordingPaymentQueue();
  logLines = [];
  rig = await startHttpRig({
    tableConnectionString: azurite().connectionString,
    functionKeys: { alice: KEY },
    queue,
    settings: { WEBHOOK_SIGNING_SECRET: SECRET, ...settings },
    log: (_name, level, message) => logLines.push(`${level} ${message}`),
  });
}
afterEach(async () => {
  await rig?.stop();
});

const payment = () => ({ paymentId: `pay-std-${++n}`, customerId: 'c-1', amount: 990, currency: 'EUR' });

/** A raw request with node:http, so that a header can be sent as several field lines (an array). */
function send(method: string, path: string, headers: Record<string, string | string[]>, body = '') {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>((resolve, reject) => {
    const req = httpRequest(`${rig.url}${path}`, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const withKey = (more: Record<string, string | string[]> = {}) => ({ 'x-functions-key': KEY, 'content-type': 'application/json', ...more });

describe('Idempotency-Key: one field, one key', () => {
  beforeEach(() => start());

  test('two Idempotency-Key field lines are a malformed request (400), not one key "a, b"; nothing is enqueued', async () => {
    const twoLines = await send('POST', '/api/payments', withKey({ 'idempotency-key': ['"k-a"', '"k-b"'] }), JSON.stringify(payment()));
    expect(twoLines.status).toBe(400);
    expect(twoLines.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(twoLines.text)).toMatchObject({ type: '/problems/idempotency-key-duplicate', status: 400 });
    const bare = await send('POST', '/api/payments', withKey({ 'idempotency-key': ['a', 'b'] }), JSON.stringify(payment()));
    expect(bare.status).toBe(400);
    expect(queue.sent).toHaveLength(0);
  });

  test('a quoted key holding a comma is one key (202), and its retry is replayed', async () => {
    const body = JSON.stringify(payment());
    const first = await send('POST', '/api/payments', withKey({ 'idempotency-key': '"a,b"' }), body);
    expect(first.status).toBe(202);
    const again = await send('POST', '/api/payments', withKey({ 'idempotency-key': '"a,b"' }), body);
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(queue.sent).toHaveLength(1);
  });
});

describe('methods (RFC 9110 §15.5.6) and authentication (§15.5.2)', () => {
  test('a method a function does not allow is 405 with Allow; HEAD of the status is its GET without a body; OPTIONS is 204 with Allow', async () => {
    await start();
    for (const [method, path, allow] of [
      ['GET', '/api/payments', 'POST, OPTIONS'],
      ['PUT', '/api/payments', 'POST, OPTIONS'],
      ['DELETE', '/api/payments/pay-1', 'GET, HEAD, OPTIONS'],
      ['POST', '/api/payments/pay-1', 'GET, HEAD, OPTIONS'],
      ['GET', '/api/webhooks/payment-provider', 'POST, OPTIONS'],
    ] as const) {
      const answer = await send(method, path, withKey());
      expect({ method, path, status: answer.status, allow: answer.headers.allow }).toEqual({ method, path, status: 405, allow });
    }
    const head = await send('HEAD', '/api/payments/pay-never', withKey());
    expect(head.status).toBe(404);
    expect(head.text).toBe('');
    const options = await send('OPTIONS', '/api/payments', withKey());
    expect({ status: options.status, allow: options.headers.allow, text: options.text }).toEqual({ status: 204, allow: 'POST, OPTIONS', text: '' });
  });

  test('behind EasyAuth, a request without a principal is 401 with a Bearer challenge; every 401 the app answers has one', async () => {
    await start({ HTTP_CALLER_IDENTITY: 'easyAuth' });
    const answer = await send('POST', '/api/payments', withKey({ 'idempotency-key': 'k-1' }), JSON.stringify(payment()));
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toMatch(/^Bearer( |$)/);
    const principal = Buffer.from(JSON.stringify({ identityProvider: 'aad', userId: 'u-1' })).toString('base64');
    expect(
      (await send('POST', '/api/payments', withKey({ 'idempotency-key': 'k-1', 'x-ms-client-principal': principal }), JSON.stringify(payment()))).status,
    ).toBe(202);
  });

  test('a forged webhook signature is 403 (credentials refused; no challenge exists for a provider signature), not a 401 without WWW-Authenticate', async () => {
    await start();
    const raw = JSON.stringify({ id: 'evt_forged', type: 'charge.succeeded' });
    const forged = await send(
      'POST',
      '/api/webhooks/payment-provider',
      {
        'content-type': 'application/json',
        'provider-signature': signatureHeader('not-the-secret-0123456789', Math.floor(Date.now() / 1000), Buffer.from(raw)),
      },
      raw,
    );
    expect(forged.status).toBe(403);
  });
});

describe('webhook events', () => {
  const deliver = (body: unknown, secret = SECRET) => {
    const raw = JSON.stringify(body);
    return send(
      'POST',
      '/api/webhooks/payment-provider',
      { 'content-type': 'application/json', 'provider-signature': signatureHeader(secret, Math.floor(Date.now() / 1000), Buffer.from(raw)) },
      raw,
    );
  };

  test('a signed event of a type the app does not handle is acknowledged (200 ignored), logged, and not applied; its redelivery too', async () => {
    await start();
    const paymentId = `pay-std-${++n}`;
    const unknown = { id: `evt_dispute_${paymentId}`, type: 'charge.dispute.created', created: 1, data: { paymentId, reason: 'fraudulent' } };
    for (let i = 0; i < 2; i++) {
      const answer = await deliver(unknown);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toEqual({ received: true, eventId: unknown.id, outcome: 'ignored' });
    }
    expect(await rig.paymentState.get(paymentId)).toBeUndefined();
    expect(logLines.filter((l) => /event type not handled/.test(l) && l.includes('charge.dispute.created'))).toHaveLength(2);
    expect(logLines.join('\n')).not.toContain('fraudulent');
    // Unsigned, the same body is still refused: the type is only looked at after the signature.
    const unsigned = await send('POST', '/api/webhooks/payment-provider', { 'content-type': 'application/json' }, JSON.stringify(unknown));
    expect(unsigned.status).toBe(400);
  });

  test('during a secret rotation both the current and the previous secret are accepted; any other is refused', async () => {
    await start({ WEBHOOK_SIGNING_SECRET_PREVIOUS: PREVIOUS });
    const event = (id: string, version: number) => ({
      id,
      type: 'charge.succeeded',
      created: 1,
      data: { paymentId: `pay-rot-${id}`, chargeId: 'ch_1', amount: 100, currency: 'EUR', version },
    });
    expect((await deliver(event('evt_rot_new', 1), SECRET)).status).toBe(200);
    expect((await deliver(event('evt_rot_old', 1), PREVIOUS)).status).toBe(200);
    expect((await deliver(event('evt_rot_other', 1), 'whsec_unknown_0123456789abcdef')).status).toBe(403);
  });
});
