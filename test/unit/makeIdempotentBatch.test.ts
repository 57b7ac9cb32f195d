import { InvocationContext } from '@azure/functions';
import {
  BatchIncompleteError,
  InMemoryIdempotencyStore,
  keyFromCloudEvent,
  makeIdempotentBatch,
  payloadDigest,
  PARKED_RESULT,
  StoreUnavailableError,
  type BatchParkReason,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { FakeClock } from '../support/tables';

interface Event {
  specversion: '1.0';
  source: string;
  id: string;
  type: string;
  data: { points: number };
}

const event = (id: string, points = 1): Event => ({ specversion: '1.0', source: '/payments', id, type: 'PaymentSucceeded', data: { points } });

/** An Event Hubs batch context as the v4 worker builds it (cardinality many: arrays per event). */
function hubContext(count: number): InvocationContext {
  return new InvocationContext({
    invocationId: `inv-${Math.random()}`,
    functionName: 'rewards',
    triggerMetadata: {
      partitionContext: { eventHubName: 'payments', consumerGroup: '$Default', partitionId: '0' },
      sequenceNumberArray: Array.from({ length: count }, (_, i) => 100 + i),
      offsetArray: Array.from({ length: count }, (_, i) => String(4096 * i)),
      propertiesArray: Array.from({ length: count }, () => ({})),
    },
    logHandler: () => undefined,
  });
}

function setup(options: { maxAttempts?: number; waitBudgetMs?: number } = {}) {
  const clock = new FakeClock();
  const store = new InMemoryIdempotencyStore({ leaseMs: 60_000, clock });
  const ran: string[] = [];
  const parked: Array<{ id: string; reason: BatchParkReason; detail: string }> = [];
  let failFor = new Map<string, number>(); // id -> failures left
  const handler = makeIdempotentBatch(
    async (e: Event) => {
      ran.push(e.id);
      const left = failFor.get(e.id) ?? 0;
      if (left > 0) {
        failFor.set(e.id, left - 1);
        throw new Error(`handler failed for ${e.id}`);
      }
      return { added: e.data.points };
    },
    {
      store,
      consumer: 'rewards',
      clock,
      retryDelayMs: 0,
      pollMs: 1,
      maxAttempts: options.maxAttempts ?? 3,
      waitBudgetMs: options.waitBudgetMs,
      park: async (e, reason, detail) => {
        parked.push({ id: (e as Event | undefined)?.id ?? '?', reason, detail });
      },
    },
  );
  return { clock, store, ran, parked, handler, failing: (map: Record<string, number>) => (failFor = new Map(Object.entries(map))) };
}

const keyOf = (id: string): IdempotencyKey => keyFromCloudEvent('rewards', { source: '/payments', id });

describe('makeIdempotentBatch: a cardinality-many batch, each event on its own key, in order', () => {
  test('a batch runs every event once, in order; the same batch replayed from a checkpoint runs nothing and answers the stored results', async () => {
    const { ran, handler } = setup();
    const batch = [event('e1', 5), event('e2', 7), event('e3', 1)];
    const first = await handler(batch, hubContext(3));
    expect(first.map((o) => o.kind)).toEqual(['completed', 'completed', 'completed']);
    expect(ran).toEqual(['e1', 'e2', 'e3']);
    const replay = await handler(batch, hubContext(3));
    expect(replay).toMatchObject([
      { kind: 'duplicate', result: { added: 5 } },
      { kind: 'duplicate', result: { added: 7 } },
      { kind: 'duplicate', result: { added: 1 } },
    ]);
    expect(ran).toEqual(['e1', 'e2', 'e3']);
  });

  test("a producer's retry inside one batch is a duplicate of its first occurrence; the same id with another payload is parked as key reuse", async () => {
    const { ran, parked, handler } = setup();
    const outcomes = await handler([event('e1', 5), event('e2'), event('e1', 5), event('e2', 99)], hubContext(4));
    expect(outcomes.map((o) => o.kind)).toEqual(['completed', 'completed', 'duplicate', 'parked']);
    expect(outcomes[2]).toMatchObject({ result: { added: 5 } });
    expect(ran).toEqual(['e1', 'e2']);
    expect(parked).toMatchObject([{ id: 'e2', reason: 'key-reused' }]);
  });

  test('an event whose data nests 5,000 deep (no digest: deeper than MAX_PAYLOAD_DEPTH) is parked as invalid-payload; the good events run', async () => {
    const { ran, parked, handler } = setup();
    const deep = { ...event('deep'), data: JSON.parse('['.repeat(5000) + ']'.repeat(5000)) as unknown } as unknown as Event;
    const outcomes = await handler([event('e1'), deep, event('e2')], hubContext(3));
    expect(outcomes.map((o) => o.kind)).toEqual(['completed', 'parked', 'completed']);
    expect(parked).toMatchObject([{ id: 'deep', reason: 'invalid-payload' }]);
    expect(ran).toEqual(['e1', 'e2']);
  });

  test('failure rule: a failing event is tried again in this invocation and later events wait for it (order kept)', async () => {
    const { ran, handler, failing, store } = setup();
    failing({ e2: 2 });
    const outcomes = await handler([event('e1'), event('e2'), event('e3')], hubContext(3));
    expect(outcomes.map((o) => o.kind)).toEqual(['completed', 'completed', 'completed']);
    expect(ran).toEqual(['e1', 'e2', 'e2', 'e2', 'e3']);
    expect(outcomes[1]).toMatchObject({ attempt: 3 });
    expect(await store.get(keyOf('e2'))).toMatchObject({ status: 'COMPLETED', attempt: 3 });
  });

  test('retries exhausted: the event is parked with its reason and recorded as done; the batch moves on; a replay skips it', async () => {
    const { ran, parked, handler, failing, store } = setup({ maxAttempts: 2 });
    failing({ e2: 99 });
    const outcomes = await handler([event('e1'), event('e2'), event('e3')], hubContext(3));
    expect(outcomes.map((o) => o.kind)).toEqual(['completed', 'parked', 'completed']);
    expect(parked).toMatchObject([{ id: 'e2', reason: 'retries-exhausted' }]);
    expect(parked[0].detail).toMatch(/2 tries failed; last: Error: handler failed for e2/);
    expect(await store.get(keyOf('e2'))).toMatchObject({ status: 'COMPLETED', result: PARKED_RESULT });
    const replay = await handler([event('e1'), event('e2'), event('e3')], hubContext(3));
    expect(replay.map((o) => o.kind)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(parked).toHaveLength(1);
    expect(ran.filter((id) => id === 'e2')).toHaveLength(2);
  });

  test('a park that fails with a store outage (retryable) throws the batch: nothing is checkpointed past it, and the claims not run are given up for the retry', async () => {
    const clock = new FakeClock();
    const store = new InMemoryIdempotencyStore({ leaseMs: 60_000, clock });
    const handler = makeIdempotentBatch(
      async (e: Event) => {
        if (e.id === 'e2') throw new Error('always');
        return 'ok';
      },
      {
        store,
        consumer: 'rewards',
        clock,
        retryDelayMs: 0,
        maxAttempts: 1,
        park: async () => {
          throw new StoreUnavailableError('parking table unreachable', 'park');
        },
      },
    );
    await expect(handler([event('e1'), event('e2'), event('e3')], hubContext(3))).rejects.toThrow(/parking table unreachable/);
    expect(await store.get(keyOf('e1'))).toMatchObject({ status: 'COMPLETED' });
    expect(await store.get(keyOf('e2'))).toMatchObject({ status: 'RELEASED' });
    expect(await store.get(keyOf('e3'))).toMatchObject({ status: 'RELEASED', lastError: 'batch stopped before this event' });
    expect((await store.claim(keyOf('e3'), payloadDigest(event('e3')))).kind).toBe('reclaimed'); // at once, no lease to wait out
  });

  test('a park that keeps failing has an end: tried parkAttempts times, then the event is kept in its idempotency record (PARK_FAILED) and the batch goes on', async () => {
    const clock = new FakeClock();
    const store = new InMemoryIdempotencyStore({ leaseMs: 60_000, clock });
    let parkCalls = 0;
    const handler = makeIdempotentBatch(
      async (e: Event) => {
        if (e.id === 'e2') throw new Error('always');
        return 'ok';
      },
      {
        store,
        consumer: 'rewards',
        clock,
        retryDelayMs: 0,
        maxAttempts: 1,
        parkAttempts: 2,
        park: async () => {
          parkCalls++;
          throw new Error('parking table unreachable');
        },
      },
    );
    // e2 fails and cannot be parked; e4 reuses e1's key with another payload (no record of its own) and cannot be parked either.
    const outcomes = await handler([event('e1'), event('e2'), event('e3'), event('e1', 99)], hubContext(4));
    expect(outcomes.map((o) => o.kind)).toEqual(['completed', 'parked', 'completed', 'parked']);
    expect(outcomes[1]).toMatchObject({
      reason: 'retries-exhausted',
      detail: expect.stringMatching(/park failed 2 times.*parking table unreachable.*kept in the idempotency record/s),
    });
    expect(parkCalls).toBe(4);
    expect(await store.get(keyOf('e2'))).toMatchObject({ status: 'COMPLETED', result: { parked: false, parkFailed: true, reason: 'retries-exhausted' } });
    // A replay skips both: e2 is on record, e4's payload is on record under its own last-resort key.
    parkCalls = 0;
    const replay = await handler([event('e1'), event('e2'), event('e3'), event('e1', 99)], hubContext(4));
    expect(replay.map((o) => o.kind)).toEqual(['duplicate', 'duplicate', 'duplicate', 'parked']);
    expect(parkCalls).toBe(2); // the in-batch reuse is tried again (its last resort is found: no new record)
  });

  test('an event without a stable identity is parked (invalid-key), never keyed by its offset or sequence number', async () => {
    const { ran, parked, handler } = setup();
    const outcomes = await handler([{ data: { points: 1 } } as unknown as Event, event('e1')], hubContext(2));
    expect(outcomes.map((o) => o.kind)).toEqual(['parked', 'completed']);
    expect(parked[0]).toMatchObject({ reason: 'invalid-key' });
    expect(parked[0].detail).toMatch(/offset and sequence number/);
    expect(ran).toEqual(['e1']);
  });

  test('an event another invocation holds (a partition handover) is waited for: its completion makes it a duplicate here', async () => {
    const { ran, store, handler } = setup();
    const other = await store.claim(keyOf('e2'), payloadDigest(event('e2')));
    if (other.kind !== 'claimed') throw new Error(other.kind);
    setTimeout(() => void store.complete(other.claim, { added: 1, by: 'other instance' }), 20);
    const outcomes = await handler([event('e1'), event('e2'), event('e3')], hubContext(3));
    expect(outcomes).toMatchObject([{ kind: 'completed' }, { kind: 'duplicate', result: { by: 'other instance' } }, { kind: 'completed' }]);
    expect(ran).toEqual(['e1', 'e3']);
  });

  test('past the wait budget the batch throws BatchIncompleteError (retryable), with the events before it done', async () => {
    const { store, handler, clock } = setup({ waitBudgetMs: 5 });
    await store.claim(keyOf('e2'), payloadDigest(event('e2')));
    const timer = setInterval(() => clock.advance(1), 1);
    try {
      const error = await handler([event('e1'), event('e2'), event('e3')], hubContext(3)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BatchIncompleteError);
      expect((error as BatchIncompleteError).retryable).toBe(true);
    } finally {
      clearInterval(timer);
    }
    expect(await store.get(keyOf('e1'))).toMatchObject({ status: 'COMPLETED' });
    expect(await store.get(keyOf('e3'))).toMatchObject({ status: 'RELEASED' });
  });

  test('a result that cannot be stored is parked (result-not-storable), not retried', async () => {
    const clock = new FakeClock();
    const store = new InMemoryIdempotencyStore({ leaseMs: 60_000, clock });
    const parked: string[] = [];
    let runs = 0;
    const handler = makeIdempotentBatch(
      async () => {
        runs++;
        return { total: NaN };
      },
      { store, consumer: 'rewards', clock, retryDelayMs: 0, park: async (_e, reason) => void parked.push(reason) },
    );
    expect((await handler([event('e1')], hubContext(1)))[0]).toMatchObject({ kind: 'parked', reason: 'result-not-storable' });
    expect(runs).toBe(1);
    expect(parked).toEqual(['result-not-storable']);
  });
});
