import { RecordingPaymentQueue, startHttpRig } from '../../tools/local/httpRig';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { useAzurite } from '../support/azurite';
import { FakeClock } from '../support/tables';

/**
 * `POST /api/payments` over real HTTP on loopback: the app's wiring served by the local host
 * (tools/local/httpHost.ts), the dedup records on Azurite. What a client sees: status, headers, bytes.
 */
const azurite = useAzurite();
const KEYS = { alice: 'alice-function-key-0001', bob: 'bob-function-key-0002' };

let rig: Awaited<ReturnType<typeof startHttpRig>>;
let queue: RecordingPaymentQueue;
let n = 0;

beforeEach(async () => {
  queue = new RecordingPaymentQueue();
  rig = await startHttpRig({ tableConnectionString: azurite().connectionString, functionKeys: KEYS, queue, leaseMs: 2_000 });
});
afterEach(async () => {
  await rig.stop();
});

const payment = (overrides: Record<string, unknown> = {}) => ({ paymentId: `pay-${++n}`, customerId: 'c-1', amount: 1250, currency: 'EUR', ...overrides });

async function post(body: unknown, headers: Record<string, string>, signal?: AbortSignal) {
  const response = await fetch(`${rig.url}/api/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  return { status: response.status, headers: Object.fromEntries(response.headers), bytes: Buffer.from(await response.arrayBuffer()) };
}

const as = (caller: keyof typeof KEYS, key?: string) => ({ 'x-functions-key': KEYS[caller], ...(key === undefined ? {} : { 'idempotency-key': key }) });

describe('POST /api/payments over HTTP', () => {
  test('payments api: no function key is refused by the host (401), a missing or malformed Idempotency-Key with 400, and nothing is stored', async () => {
    expect((await post(payment(), { 'idempotency-key': 'k' })).status).toBe(401);
    expect((await post(payment(), { 'x-functions-key': 'wrong', 'idempotency-key': 'k' })).status).toBe(401);
    const missing = await post(payment(), as('alice'));
    expect(missing.status).toBe(400);
    expect(missing.headers['content-type']).toBe('application/problem+json');
    expect((await post(payment(), as('alice', 'x'.repeat(256)))).status).toBe(400);
    expect((await post(payment(), as('alice', 'caf\u00e9'))).status).toBe(400);
    expect((await post(payment(), as('alice', '"unterminated'))).status).toBe(400);
    // An invalid body is not stored either: the same key with a corrected body is accepted.
    expect((await post({ paymentId: 'p x' }, as('alice', 'fix-me'))).status).toBe(400);
    expect((await post('not json', as('alice', 'fix-me'))).status).toBe(400);
    expect((await post(payment(), as('alice', 'fix-me'))).status).toBe(202);
    expect((await post(payment(), as('alice', 'x'.repeat(255)))).status).toBe(202);
    expect(queue.sent).toHaveLength(2);
  });

  test('payments api: the first request enqueues with MessageId = paymentId and answers 202 with the status location; a retry replays it byte for byte', async () => {
    const body = payment();
    const first = await post(body, as('alice', 'key-1'));
    expect(first.status).toBe(202);
    expect(first.headers.location).toBe(`/api/payments/${body.paymentId}`);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(queue.sent).toEqual([{ messageId: body.paymentId, body }]);

    // The same request again (members reordered: the same JSON value).
    const { amount, ...rest } = body;
    const replay = await post({ amount, ...rest }, as('alice', 'key-1'));
    expect(replay.status).toBe(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(replay.headers.location).toBe(first.headers.location);
    expect(replay.headers['content-type']).toBe(first.headers['content-type']);
    expect(queue.sent).toHaveLength(1);
    // The draft's quoted form names the same key.
    const quoted = await post(body, as('alice', '"key-1"'));
    expect(quoted.bytes.equals(first.bytes)).toBe(true);
  });

  test('payments api: a client that times out and retries gets 409 with Retry-After while the first runs, then the first answer replayed; one message', async () => {
    queue.delayMs = 700;
    const body = payment();
    await expect(post(body, as('alice', 'slow'), AbortSignal.timeout(100))).rejects.toThrow();
    const during = await post(body, as('alice', 'slow'));
    expect(during.status).toBe(409);
    expect(Number(during.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(during.headers['content-type']).toBe('application/problem+json');
    await new Promise((resolve) => setTimeout(resolve, 900));
    const after = await post(body, as('alice', 'slow'));
    expect(after.status).toBe(202);
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(JSON.parse(after.bytes.toString())).toMatchObject({ paymentId: body.paymentId, status: 'accepted' });
    expect(queue.sent).toHaveLength(1);
  });

  test('payments api: concurrent requests with one key yield one 202, the others 409 or the replay, and one message', async () => {
    queue.delayMs = 150;
    const body = payment();
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(body, as('alice', 'race'))));
    const fresh = answers.filter((a) => a.status === 202 && a.headers['idempotent-replayed'] === undefined);
    expect(fresh).toHaveLength(1);
    for (const a of answers.filter((x) => x !== fresh[0])) {
      expect([409, 202]).toContain(a.status);
      if (a.status === 202) expect(a.bytes.equals(fresh[0].bytes)).toBe(true);
    }
    expect(queue.sent).toHaveLength(1);
  });

  test('payments api: the same key with another body gets 422 and sends nothing', async () => {
    const body = payment();
    expect((await post(body, as('alice', 'reused'))).status).toBe(202);
    const other = await post({ ...body, amount: body.amount + 1 }, as('alice', 'reused'));
    expect(other.status).toBe(422);
    expect(JSON.parse(other.bytes.toString())).toMatchObject({ type: '/problems/idempotency-key-reused', status: 422 });
    expect(queue.sent).toHaveLength(1);
  });

  test('payments api: two callers with the same key value are independent; each gets only its own answer', async () => {
    const a = payment();
    const b = payment();
    const first = await post(a, as('alice', 'shared-key'));
    const second = await post(b, as('bob', 'shared-key'));
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(second.bytes.toString())).toMatchObject({ paymentId: b.paymentId });
    // Bob sending Alice's body with the shared key is Bob's reuse (422), never Alice's replay.
    expect((await post(a, as('bob', 'shared-key'))).status).toBe(422);
    const aliceAgain = await post(a, as('alice', 'shared-key'));
    expect(aliceAgain.bytes.equals(first.bytes)).toBe(true);
    expect(queue.sent.map((m) => m.messageId)).toEqual([a.paymentId, b.paymentId]);
  });

  test('payments api: a failed enqueue is answered 503 and not stored: a retry with the same key runs again', async () => {
    queue.failNext(1);
    const body = payment();
    const failed = await post(body, as('alice', 'flaky'));
    expect(failed.status).toBe(503);
    expect(failed.headers['retry-after']).toBeDefined();
    const retried = await post(body, as('alice', 'flaky'));
    expect(retried.status).toBe(202);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(queue.sent).toHaveLength(1);
  });
});

describe('Idempotency-Key records expire', () => {
  test('payments api: a key is kept 24 h by default and then swept by the expiry sweep like every record; the key is then new', async () => {
    const clock = new FakeClock(Date.now());
    const q = new RecordingPaymentQueue();
    const r = await startHttpRig({ tableConnectionString: azurite().connectionString, functionKeys: KEYS, queue: q, clock });
    try {
      const send = (body: unknown) =>
        fetch(`${r.url}/api/payments`, {
          method: 'POST',
          headers: { 'x-functions-key': KEYS.alice, 'idempotency-key': 'day-key', 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then((res) => res.status);
      const body = payment();
      expect(await send(body)).toBe(202);
      clock.advance(23 * 3_600_000);
      expect(await send({ ...body, amount: 1 })).toBe(422);
      clock.advance(1 * 3_600_000 + 1);
      const report = await new ExpirySweeper(r.idempotencyTable, { budgetMs: 10_000, clock }).sweep();
      expect(report.deleted).toBe(2); // the key's record and the payment's "accepted" marker (same retention)
      expect(await send({ ...body, amount: 1 })).toBe(202);
      expect(q.sent).toHaveLength(2);
    } finally {
      await r.stop();
    }
  });
});
