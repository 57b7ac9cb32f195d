import { InvocationContext } from '@azure/functions';
import {
  ConfigurationError,
  InMemoryIdempotencyStore,
  InvalidKeyError,
  KeyReusedError,
  getIdempotencyScope,
  makeIdempotent,
  type ClaimOptions,
  type IdempotencyKey,
  type IdempotencyStore,
} from 'azure-functions-idempotency/internal';
import { FakeClock } from '../support/tables';

/** A Service Bus invocation context as the v4 worker builds it (test mode of @azure/functions). */
function serviceBusContext(messageId: unknown, deliveryCount = 1, applicationProperties: Record<string, unknown> = {}): InvocationContext {
  return new InvocationContext({
    invocationId: `inv-${Math.random()}`,
    functionName: 'payments',
    triggerMetadata: { messageId, deliveryCount, applicationProperties },
    logHandler: () => undefined,
  });
}

interface Payment {
  paymentId: string;
  amount: number;
}

function setup() {
  const clock = new FakeClock();
  const store = new InMemoryIdempotencyStore({ leaseMs: 60_000, clock });
  const claims: Array<ClaimOptions | undefined> = [];
  const spy: IdempotencyStore = Object.assign(Object.create(store) as IdempotencyStore, {
    claim: (key: IdempotencyKey, digest: string, options?: ClaimOptions) => {
      claims.push(options);
      return store.claim(key, digest, options);
    },
  });
  return { clock, store, spy, claims };
}

describe('makeIdempotent wraps a Functions v4 handler as it is', () => {
  test('key from triggerMetadata.messageId: a redelivered message runs once and gets the stored result', async () => {
    const { store } = setup();
    let runs = 0;
    const handler = makeIdempotent(async (message: Payment, _context: InvocationContext) => ({ charged: message.amount, run: ++runs }), {
      store,
      consumer: 'payments',
    });
    const message = { paymentId: 'p1', amount: 5 };
    expect(await handler(message, serviceBusContext('p1'))).toEqual({ charged: 5, run: 1 });
    expect(await handler(message, serviceBusContext('p1', 2))).toEqual({ charged: 5, run: 1 });
    expect(await handler(message, serviceBusContext('p2'))).toEqual({ charged: 5, run: 2 });
    expect(await store.get({ consumer: 'payments', key: 'p1' })).toMatchObject({ status: 'COMPLETED' });
  });

  test('every argument and `this` reach the handler unchanged', async () => {
    const { store } = setup();
    const seen: unknown[] = [];
    const owner = {
      name: 'owner',
      handle: makeIdempotent(
        async function (this: { name: string }, message: Payment, context: InvocationContext, extra: string) {
          seen.push(this.name, message, context.invocationId, extra);
          return 'ok';
        },
        { store, consumer: 'payments' },
      ),
    };
    const context = serviceBusContext('p-this');
    await owner.handle({ paymentId: 'p-this', amount: 1 }, context, 'third');
    expect(seen).toEqual(['owner', { paymentId: 'p-this', amount: 1 }, context.invocationId, 'third']);
  });

  test('CloudEvents: source + id is the key (structured body, or binary-mode application properties), not the messageId', async () => {
    const { store } = setup();
    let runs = 0;
    const handler = makeIdempotent(async (_event: unknown, _context: InvocationContext) => ++runs, { store, consumer: 'events' });
    const event = { specversion: '1.0', source: '/shop', id: 'e-1', type: 'x', data: { a: 1 } };
    expect(await handler(event, serviceBusContext('broker-id-1'))).toBe(1);
    expect(await handler(event, serviceBusContext('broker-id-2'))).toBe(1); // other messageId, same event
    expect(await store.get({ consumer: 'events', key: JSON.stringify(['/shop', 'e-1']) })).toBeDefined();
    const binary = serviceBusContext('broker-id-3', 1, { 'cloudEvents:source': '/shop', 'cloudEvents:id': 'e-2' });
    expect(await handler({ a: 1 }, binary)).toBe(2);
    expect(await store.get({ consumer: 'events', key: JSON.stringify(['/shop', 'e-2']) })).toBeDefined();
  });

  test.each([
    ['binary mode without cloudEvents:source', { 'cloudEvents:specversion': '1.0', 'cloudEvents:id': 'e-1' }, { a: 1 }, /source is missing.*binary mode/],
    ['binary mode without cloudEvents:id', { 'cloudEvents:specversion': '1.0', 'cloudEvents:source': '/shop' }, { a: 1 }, /id is missing.*binary mode/],
    ['binary mode with only cloudEvents:type', { 'cloudEvents:type': 'x' }, { a: 1 }, /binary mode/],
    ['binary mode (cloudEvents_ prefix) without id', { cloudEvents_source: '/shop' }, { a: 1 }, /id is missing/],
    ['structured mode without source', {}, { specversion: '1.0', id: 'e-1', type: 'x' }, /source is missing.*structured mode/],
    ['structured mode without id', {}, { specversion: '1.0', source: '/shop', type: 'x' }, /id is missing.*structured mode/],
    ['structured mode with an empty source', {}, { specversion: '1.0', source: '', id: 'e-1' }, /source is empty/],
  ])(
    'an incomplete CloudEvent (%s) is refused with InvalidKeyError, never keyed by the messageId, and nothing is claimed',
    async (_what, properties, body, message) => {
      const { store, spy, claims } = setup();
      let runs = 0;
      const handler = makeIdempotent(async (_event: unknown, _context: InvocationContext) => ++runs, { store: spy, consumer: 'events' });
      const refused = handler(body, serviceBusContext('broker-id-1', 1, properties));
      await expect(refused).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(handler(body, serviceBusContext('broker-id-2', 1, properties))).rejects.toThrow(message);
      expect(runs).toBe(0);
      expect(claims).toHaveLength(0);
      expect(await store.get({ consumer: 'events', key: 'broker-id-1' })).toBeUndefined();
    },
  );

  test('binary mode is also read from userProperties (older Service Bus extensions): an incomplete one is refused there too', async () => {
    const { store } = setup();
    const handler = makeIdempotent(async (_event: unknown, _context: InvocationContext) => 'ran', { store, consumer: 'events' });
    const legacy = (userProperties: Record<string, unknown>) =>
      new InvocationContext({
        invocationId: 'inv-up',
        functionName: 'events',
        triggerMetadata: { messageId: 'broker-id', userProperties },
        logHandler: () => undefined,
      });
    expect(await handler({ a: 1 }, legacy({ 'cloudEvents:source': '/shop', 'cloudEvents:id': 'e-9' }))).toBe('ran');
    expect(await store.get({ consumer: 'events', key: JSON.stringify(['/shop', 'e-9']) })).toBeDefined();
    await expect(handler({ a: 1 }, legacy({ 'cloudEvents:id': 'e-10' }))).rejects.toThrow(/incomplete CloudEvent/);
  });

  test('a structured CloudEvent declared by its content type must carry its identity too', async () => {
    const { store } = setup();
    const handler = makeIdempotent(async (_event: unknown, _context: InvocationContext) => 'ran', { store, consumer: 'events' });
    const context = new InvocationContext({
      invocationId: 'inv-ct',
      functionName: 'events',
      triggerMetadata: { messageId: 'broker-id', contentType: 'application/cloudevents+json; charset=utf-8' },
      logHandler: () => undefined,
    });
    await expect(handler({ data: 1 }, context)).rejects.toThrow(/incomplete CloudEvent/);
    expect(await handler({ data: 1 }, serviceBusContext('broker-id'))).toBe('ran'); // not a CloudEvent: keyed by its messageId
  });

  test('no key anywhere is InvalidKeyError naming the way out (keyOf); keyOf overrides the default', async () => {
    const { store } = setup();
    const handler = makeIdempotent(async (_m: unknown, _c: InvocationContext) => 'ok', { store, consumer: 'payments' });
    await expect(handler({}, serviceBusContext(undefined))).rejects.toThrow(/keyOf/);
    await expect(handler({}, serviceBusContext(undefined))).rejects.toBeInstanceOf(InvalidKeyError);
    const byBody = makeIdempotent(async (m: Payment, _c: InvocationContext) => m.amount, {
      store,
      keyOf: (m) => ({ consumer: 'payments', key: m.paymentId }),
    });
    expect(await byBody({ paymentId: 'biz-1', amount: 7 }, serviceBusContext('other'))).toBe(7);
  });

  test('a consumer name with surrounding white space is refused when wrapping, before any message', () => {
    const { store } = setup();
    expect(() => makeIdempotent(async () => 1, { store, consumer: 'payments ' })).toThrow(InvalidKeyError);
    expect(() => makeIdempotent(async () => 1, { store })).toThrow(ConfigurationError);
  });

  test('the response hook shapes a replayed result only (e.g. adds a header), with the record and the arguments', async () => {
    const { store } = setup();
    const handler = makeIdempotent(async (_m: Payment, _c: InvocationContext) => ({ status: 201, headers: {}, body: 'created' }), {
      store,
      consumer: 'payments',
      responseHook: (result, replay, _m, context) => ({
        ...result,
        headers: { ...result.headers, 'x-idempotent-replay': `attempt=${replay.record.attempt};by=${context.functionName}` },
      }),
    });
    const first = await handler({ paymentId: 'h1', amount: 1 }, serviceBusContext('h1'));
    expect(first.headers).toEqual({});
    const replay = await handler({ paymentId: 'h1', amount: 1 }, serviceBusContext('h1', 2));
    expect(replay).toEqual({ status: 201, headers: { 'x-idempotent-replay': 'attempt=1;by=payments' }, body: 'created' });
  });

  test('the payload digest is the message by default: the same messageId with another body is KeyReusedError', async () => {
    const { store } = setup();
    const handler = makeIdempotent(async (m: Payment, _c: InvocationContext) => m.amount, { store, consumer: 'payments' });
    await handler({ paymentId: 'r1', amount: 1 }, serviceBusContext('r1'));
    await expect(handler({ paymentId: 'r1', amount: 2 }, serviceBusContext('r1'))).rejects.toBeInstanceOf(KeyReusedError);
  });

  test('reads first only on a redelivery (deliveryCount > 1), unless turned off', async () => {
    const { spy, claims } = setup();
    const handler = makeIdempotent(async (_m: Payment, _c: InvocationContext) => 1, { store: spy, consumer: 'payments' });
    await handler({ paymentId: 'd1', amount: 1 }, serviceBusContext('d1', 1));
    await handler({ paymentId: 'd1', amount: 1 }, serviceBusContext('d1', 3));
    const off = makeIdempotent(async (_m: Payment, _c: InvocationContext) => 1, { store: spy, consumer: 'payments', readFirstOnRedelivery: false });
    await off({ paymentId: 'd1', amount: 1 }, serviceBusContext('d1', 3));
    expect(claims.map((c) => c?.readFirst)).toEqual([false, true, false]);
  });

  test('the handler sees its claim and an AbortSignal through getIdempotencyScope; outside a handler there is none', async () => {
    const { store } = setup();
    const handler = makeIdempotent(
      async (_m: Payment, _c: InvocationContext) => {
        const scope = getIdempotencyScope()!;
        return { attempt: scope.claim.attempt, aborted: scope.signal.aborted, key: scope.key.key };
      },
      { store, consumer: 'payments' },
    );
    expect(await handler({ paymentId: 's1', amount: 1 }, serviceBusContext('s1'))).toEqual({ attempt: 1, aborted: false, key: 's1' });
    expect(getIdempotencyScope()).toBeUndefined();
  });
});
