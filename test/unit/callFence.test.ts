/**
 * The call fence (src/payments/callFence.ts) on the in-memory store, edge by edge (test/integration/paymentsHandOff.test.ts
 * holds the fence on Azurite). A claim of another lifetime of the key, a mark that lands too late (at the bound and past it), a
 * record that moves on between the read and the mark, a settle at the instant its lease lapses, and what the errors
 * say (retryable, their cause, the reason bounded).
 */
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { LeaseLostError, StoreUnavailableError, keyFromMessageId, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import {
  afterHoldRefused,
  announceCall,
  assertNoCallInFlight,
  CallInFlightError,
  FenceUnreadableError,
  readFence,
  readForSettle,
} from '../../src/payments/callFence';
import type { ChargeResult } from '../../src/payments/schema';
import { FakeClock } from '../support/tables';

const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_1', amount: 500, currency: 'EUR' };
const LEASE_MS = 3_000; // a run's callLeaseMs: the mark must land with at least 2 000 ms (two thirds) of it left

let clock: FakeClock;
let store: InMemoryIdempotencyStore;

beforeEach(() => {
  clock = new FakeClock();
  store = new InMemoryIdempotencyStore({ clock, leaseMs: 60_000 });
});

async function claimOf(id: string): Promise<Claim> {
  const outcome = await store.claim(keyFromMessageId('payments', id), 'd'.repeat(64));
  if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  return outcome.claim;
}

/** `store` with some of its methods replaced. */
function storeWith(overrides: Partial<IdempotencyStore>): IdempotencyStore {
  return Object.assign(Object.create(store) as IdempotencyStore, overrides);
}

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as Error,
  );
}

describe('readFence: the record must hold this claim of this lifetime of the key', () => {
  test('in progress under the same attempt but another lifetime (createdAtMs): moved on, not current', async () => {
    const claim = await claimOf('pay-1');
    expect(await readFence(store, claim)).toEqual({ current: expect.objectContaining({ attempt: 1, createdAtMs: claim.createdAtMs }) });
    const earlierLifetime = { ...claim, createdAtMs: claim.createdAtMs - 1 };
    expect(await readFence(store, earlierLifetime)).toEqual({
      movedOn: { result: { status: 'failed', reason: expect.stringMatching(/moved on \(IN_PROGRESS, attempt 1\)/) }, record: 'fenced' },
    });
  });

  test('in progress in the same lifetime but taken over by a later attempt: moved on for the earlier claim, naming the attempt', async () => {
    const claim = await claimOf('pay-1');
    clock.advance(60_001);
    const again = await store.claim(claim.key, claim.digest);
    if (again.kind !== 'reclaimed' && again.kind !== 'claimed') throw new Error(again.kind);
    expect([again.claim.attempt, again.claim.createdAtMs]).toEqual([2, claim.createdAtMs]);
    expect(await readFence(store, claim)).toEqual({
      movedOn: {
        result: { status: 'failed', reason: 'not charged: the record moved on (IN_PROGRESS, attempt 2) before this call of attempt 1' },
        record: 'fenced',
      },
    });
  });

  test("completed: its result for a claim of the same lifetime; for another lifetime's claim `failed`, never that result", async () => {
    const claim = await claimOf('pay-2');
    await store.complete(claim, charged);
    expect(await readFence(store, claim)).toEqual({ movedOn: { result: charged, record: 'fenced' } });
    const other = await readFence(store, { ...claim, createdAtMs: claim.createdAtMs + 1 });
    expect(other).toEqual({ movedOn: { result: { status: 'failed', reason: expect.stringMatching(/moved on \(COMPLETED, attempt 1\)/) }, record: 'fenced' } });
  });

  test('no record at all: moved on, the reason says it is gone', async () => {
    const claim = await claimOf('pay-3');
    const gone = await readFence(storeWith({ get: async () => undefined }), claim);
    expect(gone).toEqual({
      movedOn: { result: { status: 'failed', reason: 'not charged: the record moved on (gone) before this call of attempt 1' }, record: 'fenced' },
    });
  });
});

describe('announceCall: the mark must land with two thirds of its lease left', () => {
  test('exactly two thirds left: marked; one millisecond less: refused (retryable: the run calls again later)', async () => {
    const claim = await claimOf('pay-4');
    const atBound = await announceCall(store, claim, () => clock.now + 1_000, LEASE_MS);
    expect(atBound).toEqual({ marked: expect.objectContaining({ leaseExpiresAtMs: clock.now + LEASE_MS }) });
    const late = await rejectionOf(announceCall(store, claim, () => clock.now + 1_001, LEASE_MS));
    expect(late).toBeInstanceOf(FenceUnreadableError);
    expect((late as FenceUnreadableError).retryable).toBe(true);
  });

  test('a mark that landed with a third of its lease left is refused, and the message says how much was left, once', async () => {
    const claim = await claimOf('pay-5');
    const late = await rejectionOf(announceCall(store, claim, () => clock.now + 2_000, LEASE_MS));
    expect(late.message).toBe("not calling the provider: the call could not be announced on the record (the call's mark landed with 1 s of its lease left)");
  });

  test('the default lease (CALL_LEASE_MS, 3 min): a mark read 61 s late is refused, 60 s late accepted', async () => {
    const claim = await claimOf('pay-6');
    await expect(announceCall(store, claim, () => clock.now + 60_000)).resolves.toHaveProperty('marked');
    await expect(announceCall(store, claim, () => clock.now + 61_000)).rejects.toThrow(/landed with 119 s of its lease left/);
  });

  test('a store that does not answer: refused with the store error named and kept as the cause, retryable', async () => {
    const claim = await claimOf('pay-7');
    const down = new StoreUnavailableError('ECONNREFUSED', 'get');
    const error = await rejectionOf(announceCall(storeWith({ get: () => Promise.reject(down) }), claim, () => clock.now, LEASE_MS));
    expect(error).toBeInstanceOf(FenceUnreadableError);
    expect(error.message).toBe('not calling the provider: the call could not be announced on the record (StoreUnavailableError: ECONNREFUSED)');
    expect(error.cause).toBe(down);
    expect((error as FenceUnreadableError).retryable).toBe(true);
  });

  test("the reason is bounded: a store error's message is cut at 300 characters", async () => {
    const claim = await claimOf('pay-8');
    const long = new StoreUnavailableError('x'.repeat(1_000), 'get');
    const error = await rejectionOf(announceCall(storeWith({ get: () => Promise.reject(long) }), claim, () => clock.now, LEASE_MS));
    const prefix = 'not calling the provider: the call could not be announced on the record (';
    expect(error.message).toBe(`${prefix}${`StoreUnavailableError: ${'x'.repeat(1_000)}`.slice(0, 300)})`);
  });

  test('the record completed between the read and the mark: its answer, no call and no error', async () => {
    const claim = await claimOf('pay-9');
    const racing = storeWith({
      renewLease: async (c, leaseMs) => {
        await store.complete(claim, charged); // another execution settled it meanwhile
        return store.renewLease(c, leaseMs);
      },
    });
    expect(await announceCall(racing, claim, () => clock.now, LEASE_MS)).toEqual({ movedOn: { result: charged, record: 'fenced' } });
  });

  test('the mark refused and the record then unreadable: refused, saying the record changed under the mark', async () => {
    const claim = await claimOf('pay-10');
    let reads = 0;
    const flaky = storeWith({
      get: (key) => (++reads === 1 ? store.get(key) : Promise.reject(new StoreUnavailableError('timeout', 'get'))),
      renewLease: () => Promise.reject(new LeaseLostError('payments:pay-10', 1, 'renewLease')),
    });
    const error = await rejectionOf(announceCall(flaky, claim, () => clock.now, LEASE_MS));
    expect(error.message).toMatch(/\(the record changed under the mark and could not be read again\)$/);
  });

  test('a mark the store did not answer: refused with that store error and its cause, the record not read again (only a lost lease is)', async () => {
    const claim = await claimOf('pay-14');
    let reads = 0;
    const down = new StoreUnavailableError('timeout', 'renewLease');
    const unanswered = storeWith({
      get: (key) => (++reads === 1 ? store.get(key) : Promise.reject(new StoreUnavailableError('read again', 'get'))),
      renewLease: () => Promise.reject(down),
    });
    const error = await rejectionOf(announceCall(unanswered, claim, () => clock.now, LEASE_MS));
    expect(error).toBeInstanceOf(FenceUnreadableError);
    expect(error.message).toBe('not calling the provider: the call could not be announced on the record (StoreUnavailableError: timeout)');
    expect(error.cause).toBe(down);
    expect(reads).toBe(1);
  });

  test('the mark refused while the record still reads as this claim: refused with the store error (no call)', async () => {
    const claim = await claimOf('pay-11');
    const refused = storeWith({ renewLease: () => Promise.reject(new LeaseLostError('payments:pay-11', 1, 'renewLease')) });
    await expect(announceCall(refused, claim, () => clock.now, LEASE_MS)).rejects.toThrow(
      /\(LeaseLostError: claim attempt 1 of "payments:pay-11" was taken over or removed; renewLease refused\)$/,
    );
  });
});

describe('readForSettle: no settle while an announced call may be on its way', () => {
  test('the lease lapsing at this very millisecond: settled on the exact version; a millisecond before: in flight', async () => {
    const claim = await claimOf('pay-12');
    const { marked } = (await announceCall(store, claim, () => clock.now, LEASE_MS)) as { marked: Claim };
    const early = await rejectionOf(readForSettle(store, claim, () => marked.leaseExpiresAtMs - 1));
    expect(early).toBeInstanceOf(CallInFlightError);
    expect(await readForSettle(store, claim, () => marked.leaseExpiresAtMs)).toEqual({ exact: expect.objectContaining({ etag: marked.etag }) });
  });

  test('CallInFlightError: the lease left, in ms and in the message (seconds, rounded up), retryable', async () => {
    const claim = await claimOf('pay-13');
    const { marked } = (await announceCall(store, claim, () => clock.now, LEASE_MS)) as { marked: Claim };
    const error = (await rejectionOf(readForSettle(store, claim, () => marked.leaseExpiresAtMs - 1_500))) as CallInFlightError;
    expect(error.leaseLeftMs).toBe(1_500);
    expect(error.message).toBe('not settling yet: a provider call was announced on the record and may be on its way (2 s of its lease left)');
    expect(error.retryable).toBe(true);
  });
});

describe('a hold: never over a call that may still land', () => {
  test('assertNoCallInFlight: a call announced since the claim refuses the hold until the very millisecond its lease lapses; the claim alone does not', async () => {
    const claim = await claimOf('pay-14');
    const { marked } = (await announceCall(store, claim, () => clock.now, LEASE_MS)) as { marked: Claim };
    const early = (() => {
      try {
        assertNoCallInFlight(claim, marked, marked.leaseExpiresAtMs - 1);
      } catch (error) {
        return error;
      }
    })();
    expect(early).toBeInstanceOf(CallInFlightError);
    expect((early as CallInFlightError).leaseLeftMs).toBe(1);
    expect(() => assertNoCallInFlight(claim, marked, marked.leaseExpiresAtMs)).not.toThrow();
    expect(() => assertNoCallInFlight(claim, claim, claim.leaseExpiresAtMs - 1)).not.toThrow();
  });

  test('afterHoldRefused: the call announced since, with the lease it has left (none once lapsed, never less); a record that moved on answers', async () => {
    const claim = await claimOf('pay-15');
    const { marked } = (await announceCall(store, claim, () => clock.now, LEASE_MS)) as { marked: Claim };
    const inFlight = (await rejectionOf(afterHoldRefused(store, claim, marked.leaseExpiresAtMs - 1_500))) as CallInFlightError;
    expect(inFlight).toBeInstanceOf(CallInFlightError);
    expect(inFlight.leaseLeftMs).toBe(1_500);
    expect(inFlight.message).toContain('(2 s of its lease left)');
    const lapsed = (await rejectionOf(afterHoldRefused(store, claim, marked.leaseExpiresAtMs + 5_000))) as CallInFlightError;
    expect(lapsed.leaseLeftMs).toBe(0);
    await store.complete(marked, charged);
    expect(await afterHoldRefused(store, claim, clock.now)).toEqual({ result: charged, record: 'fenced' });
  });
});
