/**
 * A first call the engine runs again (its worker died after the provider answered, its work item's delete failed) is
 * a repeat, and is planned as one. In memory: the app's own `chargeProviderActivity`, `PaymentProviderClient` over a
 * scripted `fetch`, the in-memory store and a manual clock; the inputs as the run plans them (`providerCall`).
 *
 * The schedule it holds (simulator world 2, seeds 1231, 1402, 1913, a Checkout.com-like provider): round 0's POST is
 * answered 500 after the provider charged, and the provider keeps only successes under a key (a retry after a failure
 * executes again). The engine runs round 0's activity again: before, the copy was a first call and POSTed blind (a
 * second charge); now the record shows a call announced since the claim, so the copy looks the charge up first (once
 * the earlier call's lease has run out, so that it shows), or holds when there is no look-up.
 */
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { keyFromMessageId, RecordStatus, type Claim } from 'azure-functions-idempotency';
import { loadSettings } from '../../src/config/settings';
import { retryBudgetOf } from '../../src/app/payments';
import { CallInFlightError, chargeProviderActivity } from '../../src/app/durableCharge';
import { providerCall } from '../../src/payments/providerRounds';
import { providerCapabilityOf } from '../../src/payments/providerLookup';
import { HANDOFF_VERSION } from '../../src/payments/handOffPlan';
import type { RecordedCharge } from '../../src/payments/completeRecord';
import { PaymentProviderClient, TransientProviderError } from '../../src/payments/PaymentProviderClient';
import type { ChargeResult } from '../../src/payments/schema';
import { FakeClock } from '../support/tables';
import { inMemoryTelemetry } from '../support/telemetry';

const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 500, currency: 'EUR' };

let clock: FakeClock;
let store: InMemoryIdempotencyStore;
let t: ReturnType<typeof inMemoryTelemetry>;

beforeEach(() => {
  clock = new FakeClock();
  store = new InMemoryIdempotencyStore({ clock, leaseMs: 60_000 });
  t = inMemoryTelemetry();
});
afterEach(() => t.shutdown());

/**
 * A provider whose first POST charges and answers 500 (nothing saved for the key when `failuresSaved` is false: a
 * retry executes again; saved: a retry gets the same 500), every later POST charges and answers 201, unless the key's
 * answer is saved; a look-up lists the charges made `lagMs` ago or more.
 */
function provider(o: { failuresSaved: boolean; lagMs: number }) {
  const made: { id: string; atMs: number }[] = [];
  const requests = { get: 0, post: 0 };
  let saved: Response | undefined;
  const fetchOf = async (_url: string | URL, init?: RequestInit): Promise<Response> => {
    if ((init?.method ?? 'GET') === 'GET') {
      requests.get++;
      const listed = made.filter((c) => clock.now >= c.atMs + o.lagMs).map((c) => ({ id: c.id, status: 'succeeded', amount: 500, currency: 'EUR' }));
      return new Response(JSON.stringify({ data: listed }), { status: 200 });
    }
    requests.post++;
    if (saved) return saved.clone();
    made.push({ id: `ch_${made.length + 1}`, atMs: clock.now });
    if (made.length === 1) {
      const failed = new Response('{"error":"internal"}', { status: 500 });
      if (o.failuresSaved) saved = failed.clone();
      return failed;
    }
    return new Response(JSON.stringify({ id: made.at(-1)!.id, status: 'succeeded', amount: 500, currency: 'EUR' }), { status: 201 });
  };
  return { made, requests, fetch: fetchOf as unknown as typeof fetch };
}

async function claimOf(): Promise<Claim> {
  const outcome = await store.claim(keyFromMessageId('payments', 'pay-1'), 'd'.repeat(64));
  if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  return outcome.claim;
}

/** Round 0's activity input as a handoff run plans it under these settings, with the record's claim. */
function roundZero(extra: Record<string, string>, claim: Claim) {
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true',
    PAYMENT_PROVIDER_URL: 'http://provider.invalid',
    ...extra,
  });
  const budget = retryBudgetOf(settings);
  const planned = providerCall(
    {
      idempotencyKey: 'pay-1',
      entityKey: 'e',
      attempt: claim.attempt,
      payment,
      provider: providerCapabilityOf(settings),
      keyOriginMs: claim.createdAtMs,
      handoff: { version: HANDOFF_VERSION } as never,
    },
    0,
    false,
    0,
    clock.now,
  );
  return { ...planned, recordClaim: claim, callLeaseMs: budget.callLeaseMs, postWindowMs: budget.postWindowMs };
}

const activityOver = (fetchOf: typeof fetch) =>
  chargeProviderActivity(
    new PaymentProviderClient({ baseUrl: 'http://provider.invalid', timeoutMs: 10_000, fetch: fetchOf }),
    () => t.telemetry,
    () => store,
    () => clock.now,
  );

const recordResult = async () => (await store.get(keyFromMessageId('payments', 'pay-1')))?.result as ChargeResult | undefined;

describe('a first call the engine runs again is a repeat', () => {
  test('a provider that keeps only successes: the copy waits out the first call, looks the charge up and charges nothing more', async () => {
    const p = provider({ failuresSaved: false, lagMs: 60_000 });
    const run = activityOver(p.fetch);
    const call = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'by-key', PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'successes' }, await claimOf());
    // The first call is a first call: no look-up before it.
    expect(call.lookUpFirst).toBeUndefined();
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    expect(p.requests).toEqual({ get: 0, post: 1 });
    // The engine runs the same activity again while the first call's lease runs: not made (its charge may not show yet).
    clock.advance(30_000);
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(CallInFlightError);
    expect(p.requests).toEqual({ get: 0, post: 1 });
    // Once the lease has run out, the copy looks up, finds the first call's charge and answers it.
    clock.now = (await store.get(call.recordClaim.key))!.leaseExpiresAtMs + 1;
    const answered = (await run(call, {} as never)) as RecordedCharge;
    expect(answered.result).toMatchObject({ status: 'succeeded', chargeId: 'ch_1' });
    expect(answered.record).toBe('completed');
    expect(p.made).toHaveLength(1);
    expect(p.requests).toEqual({ get: 1, post: 1 });
    expect(await recordResult()).toMatchObject({ status: 'succeeded', chargeId: 'ch_1' });
  });

  test('a provider that keeps only successes and offers no look-up: the copy is held for an operator once the first call cannot land, never a second POST', async () => {
    const p = provider({ failuresSaved: false, lagMs: 0 });
    const run = activityOver(p.fetch);
    const call = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'none', PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'successes' }, await claimOf());
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    // While the first call's lease runs, its charge may still land: no hold (an alert an operator would read as "not charged").
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(CallInFlightError);
    expect((await store.get(call.recordClaim.key))!.status).toBe(RecordStatus.InProgress);
    clock.now = (await store.get(call.recordClaim.key))!.leaseExpiresAtMs + 1;
    const answered = (await run(call, {} as never)) as RecordedCharge;
    expect(answered.result).toMatchObject({ status: 'failed', code: 'held-for-operator' });
    expect(p.requests).toEqual({ get: 0, post: 1 });
    expect((await store.get(call.recordClaim.key))!.status).toBe(RecordStatus.Completed);
  });

  test("a provider whose memory replays every answer: the copy repeats the key and gets the first call's answer, with no look-up", async () => {
    const p = provider({ failuresSaved: true, lagMs: 0 });
    const run = activityOver(p.fetch);
    const call = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'by-key' }, await claimOf());
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    expect(p.requests).toEqual({ get: 0, post: 2 });
    expect(p.made).toHaveLength(1);
  });

  test("a retry round on a provider that keeps only successes: its look-up waits out the earlier call's lease, then sees its charge", async () => {
    const p = provider({ failuresSaved: false, lagMs: 60_000 });
    const run = activityOver(p.fetch);
    const first = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'by-key', PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'successes' }, await claimOf());
    await expect(run(first, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    const { ifRepeat, ...roundOne } = { ...first, ...first.ifRepeat };
    expect(roundOne).toMatchObject({ lookUpFirst: true, lookUpSeesEarlierCalls: true });
    clock.advance(20_000);
    await expect(run(roundOne, {} as never)).rejects.toBeInstanceOf(CallInFlightError);
    clock.now = (await store.get(first.recordClaim.key))!.leaseExpiresAtMs + 1;
    expect(((await run(roundOne, {} as never)) as RecordedCharge).result).toMatchObject({ status: 'succeeded', chargeId: 'ch_1' });
    expect(p.made).toHaveLength(1);
    expect(ifRepeat).toBeDefined();
  });

  test("a look-up that need not see earlier calls (a memory that replays every answer) is made while an earlier call's lease runs", async () => {
    const p = provider({ failuresSaved: true, lagMs: 0 });
    const run = activityOver(p.fetch);
    const first = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'by-key' }, await claimOf());
    await expect(run(first, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    const lookingUp = { ...first, lookUpFirst: true as const, mayRepeat: true as const };
    expect(lookingUp).not.toHaveProperty('lookUpSeesEarlierCalls');
    clock.advance(20_000);
    const answered = (await run(lookingUp, {} as never)) as RecordedCharge;
    expect(answered.result).toMatchObject({ status: 'succeeded', chargeId: 'ch_1' });
    expect(p.requests).toEqual({ get: 1, post: 1 });
  });

  test("a look-up that must see earlier calls is made once the earlier call's lease has run out exactly", async () => {
    const p = provider({ failuresSaved: false, lagMs: 0 });
    const run = activityOver(p.fetch);
    const first = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'by-key', PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'successes' }, await claimOf());
    await expect(run(first, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    const { ifRepeat: _ifRepeat, ...roundOne } = { ...first, ...first.ifRepeat };
    clock.now = (await store.get(first.recordClaim.key))!.leaseExpiresAtMs;
    expect(((await run(roundOne, {} as never)) as RecordedCharge).result).toMatchObject({ status: 'succeeded', chargeId: 'ch_1' });
    expect(p.requests).toEqual({ get: 1, post: 1 });
  });

  test('the first call of an attempt, the record at its claim: planned as it was (no look-up, no wait)', async () => {
    const p = provider({ failuresSaved: false, lagMs: 0 });
    const run = activityOver(p.fetch);
    const call = roundZero({ PAYMENT_PROVIDER_LOOKUP: 'by-key', PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'successes' }, await claimOf());
    expect((call as { ifRepeat?: unknown }).ifRepeat).toMatchObject({ lookUpFirst: true, lookUpSeesEarlierCalls: true, mayRepeat: true });
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    expect(p.requests).toEqual({ get: 0, post: 1 });
  });
});
