import { parseIdempotencyKey } from '../../src/http/idempotencyKeyHeader';
import { callerOf } from '../../src/http/callerIdentity';
import { signatureHeader, verifyWebhookSignature } from '../../src/http/webhookSignature';

const SECRET = 'whsec_test_secret_0123456789';
const BODY = Buffer.from('{"id":"evt_1"}');
const T = 1767225600;

describe('webhook signature', () => {
  test('signature: HMAC-SHA256 over "<t>." + raw body, as an independent implementation computes it', () => {
    // python3: hmac.new(SECRET, b'1767225600.' + BODY, hashlib.sha256).hexdigest()
    expect(signatureHeader(SECRET, T, BODY)).toBe(`t=${T},v1=569800164e55480787b59f35232607ab3617785a2dc95a6bc862cda8b5506c32`);
  });

  test('signature: valid within the window; several v1 (rotation) accepted when one matches', () => {
    const header = signatureHeader(SECRET, T, BODY);
    expect(verifyWebhookSignature(header, BODY, SECRET, T * 1000 + 299_000, 300)).toEqual({ ok: true, timestampSec: T });
    const rotated = `t=${T},v1=${'0'.repeat(64)},${header.split(',')[1]}`;
    expect(verifyWebhookSignature(rotated, BODY, SECRET, T * 1000, 300).ok).toBe(true);
  });

  test('signature: missing or malformed 400, forged or tampered 403 (whatever the time), stale 400', () => {
    const header = signatureHeader(SECRET, T, BODY);
    const now = T * 1000;
    expect(verifyWebhookSignature(null, BODY, SECRET, now, 300)).toMatchObject({ reason: 'missing', status: 400 });
    for (const bad of ['t=abc,v1=00', `v1=${'a'.repeat(64)}`, `t=${T}`, `t=${T},v1=${'g'.repeat(64)}`, `t=${T},t=${T},v1=${'a'.repeat(64)}`])
      expect(verifyWebhookSignature(bad, BODY, SECRET, now, 300)).toMatchObject({ reason: 'malformed', status: 400 });
    expect(verifyWebhookSignature(signatureHeader('another-secret-xxxxxxxx', T, BODY), BODY, SECRET, now, 300)).toMatchObject({
      reason: 'mismatch',
      status: 403,
    });
    expect(verifyWebhookSignature(header, Buffer.from('{"id":"evt_2"}'), SECRET, now, 300)).toMatchObject({ reason: 'mismatch', status: 403 });
    expect(verifyWebhookSignature(signatureHeader('x'.repeat(20), T - 1000, BODY), BODY, SECRET, now, 300)).toMatchObject({ status: 403 });
    expect(verifyWebhookSignature(header, BODY, SECRET, now + 301_000, 300)).toMatchObject({ reason: 'stale', status: 400, skewSec: 301 });
    expect(verifyWebhookSignature(header, BODY, SECRET, now - 301_000, 300)).toMatchObject({ reason: 'stale', status: 400 });
  });
});

describe('Idempotency-Key header and caller identity', () => {
  test('idempotency key: 1-255 printable ASCII; the draft quoted form is unwrapped', () => {
    expect(parseIdempotencyKey('abc')).toEqual({ ok: true, key: 'abc' });
    expect(parseIdempotencyKey(' "a\\"b" ')).toEqual({ ok: true, key: 'a"b' });
    expect(parseIdempotencyKey('x'.repeat(255))).toMatchObject({ ok: true });
    expect(parseIdempotencyKey(null)).toMatchObject({ ok: false, problem: 'missing' });
    expect(parseIdempotencyKey('  ')).toMatchObject({ ok: false, problem: 'missing' });
    for (const bad of ['x'.repeat(256), '""', 'tab\there', 'caf\u00e9', '"open'])
      expect(parseIdempotencyKey(bad)).toMatchObject({ ok: false, problem: 'malformed' });
  });

  const request = (headers: Record<string, string>, url = 'https://app/api/payments') => ({
    method: 'POST',
    url,
    body: Buffer.alloc(0),
    headers: { get: (name: string) => headers[name] ?? null },
  });

  test('caller: functionKey mode is the digest of the presented key (header or code), never the key, and ignores principal headers', () => {
    const a = callerOf(request({ 'x-functions-key': 'secret-key-a' }), 'functionKey');
    expect(a).toMatch(/^key:[0-9a-f]{32}$/);
    expect(a).not.toContain('secret-key-a');
    expect(callerOf(request({}, 'https://app/api/payments?code=secret-key-a'), 'functionKey')).toBe(a);
    expect(callerOf(request({ 'x-functions-key': 'secret-key-b' }), 'functionKey')).not.toBe(a);
    expect(callerOf(request({ 'x-ms-client-principal-id': 'forged', 'x-ms-client-principal-idp': 'aad' }), 'functionKey')).toBeUndefined();
  });

  test('caller: easyAuth mode is the principal of x-ms-client-principal (or its -id/-idp headers), never the function key', () => {
    const principal = Buffer.from(
      JSON.stringify({ auth_typ: 'aad', claims: [{ typ: 'http://schemas.microsoft.com/identity/claims/objectidentifier', val: 'oid-1' }] }),
    ).toString('base64');
    expect(callerOf(request({ 'x-ms-client-principal': principal }), 'easyAuth')).toBe('entra:aad:oid-1');
    expect(callerOf(request({ 'x-ms-client-principal-id': 'u-2', 'x-ms-client-principal-idp': 'aad' }), 'easyAuth')).toBe('entra:aad:u-2');
    expect(callerOf(request({ 'x-functions-key': 'k' }), 'easyAuth')).toBeUndefined();
    expect(callerOf(request({ 'x-ms-client-principal': 'not base64 json' }), 'easyAuth')).toBeUndefined();
  });
});
