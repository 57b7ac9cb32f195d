import {
  KeyInProgressError,
  KeyReusedError,
  keyFromBusinessKey,
  ResultTooLargeError,
  StoreUnavailableError,
  makeIdempotent,
  RecordStatus,
  TableIdempotencyStore,
  getIdempotencyScope,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { FakeClock, freshTable } from '../support/tables';

const azuriteOf = useAzurite();

interface Charge {
  paymentId: string;
  amount: number;
}

async function setup(work: (input: Charge) => Promise<unknown>) {
  const clock = new FakeClock();
  const store = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: 86_400_000, leaseMs: 60_000, clock });
  const events: string[] = [];
  const charge = makeIdempotent(work, {
    store,
    keyOf: (input: Charge) => keyFromBusinessKey('charges', input, (c) => c.paymentId),
    observer: (e) => events.push(`${e.outcome}:${e.attempt}`),
  });
  return { store, charge, events, clock };
}

describe('makeIdempotent on Azurite', () => {
  test('runs the work once; a later call returns the stored result without running it', async () => {
    let runs = 0;
    const { charge, events } = await setup(async (input) => ({ chargeId: `ch-${++runs}`, amount: input.amount }));
    expect(await charge({ paymentId: 'p1', amount: 5 })).toEqual({ chargeId: 'ch-1', amount: 5 });
    expect(await charge({ paymentId: 'p1', amount: 5 })).toEqual({ chargeId: 'ch-1', amount: 5 });
    expect(runs).toBe(1);
    expect(events).toEqual(['claimed:1', 'completed:1', 'duplicate:1']);
  });

  test('20 concurrent calls with one key run the work exactly once; the others are told it is in progress', async () => {
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { charge } = await setup(async () => {
      runs++;
      await gate;
      return 'done';
    });
    let settled = 0;
    const calls = Array.from({ length: 20 }, () =>
      charge({ paymentId: 'p-c', amount: 1 })
        .then(
          (r) => r,
          (e: unknown) => e,
        )
        .finally(() => settled++),
    );
    // Hold the winner inside its work until the 19 others have been answered.
    while (settled < 19) await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    const results = await Promise.all(calls);
    expect(runs).toBe(1);
    expect(results.filter((r) => r === 'done')).toHaveLength(1);
    expect(results.filter((r) => r instanceof KeyInProgressError)).toHaveLength(19);
    expect((results.find((r) => r instanceof KeyInProgressError) as KeyInProgressError).retryable).toBe(true);
  });

  test('a failure releases the key and rethrows; the next call runs again with attempt 2', async () => {
    const attempts: number[] = [];
    const { charge, store } = await setup(async () => {
      attempts.push(getIdempotencyScope()!.claim.attempt);
      if (attempts.length === 1) throw new Error('provider down');
      return 'ok';
    });
    await expect(charge({ paymentId: 'p-f', amount: 1 })).rejects.toThrow('provider down');
    expect((await store.get({ consumer: 'charges', key: 'p-f' }))?.status).toBe(RecordStatus.Released);
    expect(await charge({ paymentId: 'p-f', amount: 1 })).toBe('ok');
    expect(attempts).toEqual([1, 2]);
  });

  test('the same key with another payload is KeyReusedError and the work does not run', async () => {
    let runs = 0;
    const { charge } = await setup(async () => ++runs);
    await charge({ paymentId: 'p-r', amount: 1 });
    await expect(charge({ paymentId: 'p-r', amount: 2 })).rejects.toThrow(KeyReusedError);
    expect(runs).toBe(1);
  });

  test("a caller whose lease lapsed and was taken over cannot complete: its result is discarded, the new owner's stands", async () => {
    let firstRelease!: () => void;
    const firstGate = new Promise<void>((resolve) => (firstRelease = resolve));
    let calls = 0;
    const { charge, clock, store } = await setup(async () => {
      calls++;
      if (calls === 1) {
        await firstGate;
        return 'stale';
      }
      return 'fresh';
    });
    const slow = charge({ paymentId: 'p-s', amount: 1 }).then(
      (r) => r,
      (e: unknown) => e,
    );
    while (calls < 1) await new Promise((resolve) => setTimeout(resolve, 10)); // the slow caller holds the claim
    clock.advance(60_001);
    expect(await charge({ paymentId: 'p-s', amount: 1 })).toBe('fresh');
    firstRelease();
    expect(await slow).toMatchObject({ name: 'LeaseLostError' });
    expect((await store.get({ consumer: 'charges', key: 'p-s' }))?.result).toBe('fresh');
  });

  test('a result too large to store releases the key with the reason; the next call runs again at once, with attempt 2', async () => {
    const clock = new FakeClock();
    const store = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: 86_400_000, leaseMs: 60_000, maxResultBytes: 1000, clock });
    const attempts: number[] = [];
    const charge = makeIdempotent(
      async (_input: Charge) => {
        attempts.push(getIdempotencyScope()!.claim.attempt);
        return attempts.length === 1 ? 'x'.repeat(2000) : 'small';
      },
      { store, keyOf: (input: Charge) => keyFromBusinessKey('charges', input, (c) => c.paymentId) },
    );
    await expect(charge({ paymentId: 'p-big', amount: 1 })).rejects.toThrow(ResultTooLargeError);
    expect(await store.get({ consumer: 'charges', key: 'p-big' })).toMatchObject({
      status: RecordStatus.Released,
      lastError: expect.stringMatching(/^ResultTooLargeError: /),
    });
    expect(await charge({ paymentId: 'p-big', amount: 1 })).toBe('small'); // no wait for the lease (the clock never moves)
    expect(attempts).toEqual([1, 2]);
  });

  test('an observer that throws changes nothing: the work completes, and a failing work still releases its key', async () => {
    const clock = new FakeClock();
    const store = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: 86_400_000, leaseMs: 60_000, clock });
    let runs = 0;
    const charge = makeIdempotent(
      async (input: Charge) => {
        runs++;
        if (input.amount < 0) throw new Error('refused');
        return 'ok';
      },
      {
        store,
        keyOf: (input: Charge) => keyFromBusinessKey('charges', input, (c) => c.paymentId),
        observer: () => {
          throw new Error('telemetry exporter broke');
        },
      },
    );
    expect(await charge({ paymentId: 'p-o', amount: 1 })).toBe('ok');
    expect((await store.get({ consumer: 'charges', key: 'p-o' }))?.status).toBe(RecordStatus.Completed);
    await expect(charge({ paymentId: 'p-o2', amount: -1 })).rejects.toThrow('refused');
    expect((await store.get({ consumer: 'charges', key: 'p-o2' }))?.status).toBe(RecordStatus.Released);
    expect(runs).toBe(2);
  });

  test("when the release after a failure fails too, the observer is told why and the work's error is thrown", async () => {
    const clock = new FakeClock();
    const store = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: 86_400_000, leaseMs: 60_000, clock });
    store.release = async () => {
      throw new StoreUnavailableError('table store unavailable during release (no response)', 'release');
    };
    const events: Array<{ outcome: string; reason?: string }> = [];
    const charge = makeIdempotent(
      async (_input: Charge) => {
        throw new Error('provider down');
      },
      {
        store,
        keyOf: (input: Charge) => keyFromBusinessKey('charges', input, (c) => c.paymentId),
        observer: (e) => events.push({ outcome: e.outcome, reason: e.reason }),
      },
    );
    await expect(charge({ paymentId: 'p-rf', amount: 1 })).rejects.toThrow('provider down');
    expect(events).toEqual([
      { outcome: 'claimed', reason: undefined },
      { outcome: 'releaseFailed', reason: 'StoreUnavailableError: table store unavailable during release (no response)' },
    ]);
  });
});
