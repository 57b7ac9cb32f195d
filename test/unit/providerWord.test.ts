/**
 * A negative result only on the provider's word about this key, given after every call of it has ended; and a late
 * success is an alarm. In memory: the app's own `chargeProviderActivity`, `PaymentProviderClient` (over a scripted
 * `fetch`), the in-memory store and a manual clock, with the settings as the app reads them.
 *
 * Each case reproduces a schedule that lost money or hid it (they failed before the fixes):
 * - a copy's call that outlives its lease: the settle looked up before the charge showed and wrote `failed`;
 * - a look-up that lists the key's charge as still processing: read as "none";
 * - a 401/403/404/405/429 or a bare 400 answering a retry of a key that had charged: recorded `rejected`;
 * - a `succeeded` answer meeting a record settled `failed`: dropped without a word.
 */
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { keyFromMessageId, RecordStatus, type Claim } from 'azure-functions-idempotency';
import { loadSettings } from '../../src/config/settings';
import { retryBudgetOf } from '../../src/app/payments';
import { chargeOnce } from '../../src/payments/chargeOnce';
import { planProviderCall, providerCapabilityOf } from '../../src/payments/providerLookup';
import { CallLeaseSpentError, chargeProviderActivity, writeRecordOnce } from '../../src/app/durableCharge';
import type { RecordedCharge } from '../../src/payments/completeRecord';
import { ChargeInFlightError, PaymentProviderClient, ProviderRefusedError, TransientProviderError } from '../../src/payments/PaymentProviderClient';
import type { ChargeResult } from '../../src/payments/schema';
import { FakeClock } from '../support/tables';
import { inMemoryTelemetry } from '../support/telemetry';

const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 500, currency: 'EUR' };

/** One charge the scripted provider made: when it was made and when its look-up shows it. */
interface Made {
  readonly id: string;
  readonly madeAtMs: number;
  readonly visibleAtMs: number;
}

/**
 * A provider as its documentation allows it to be: a look-up that takes `lookupMs`, a POST whose work goes on past the
 * client's timeout (`finishMs` after the client gave up) and whose charge shows in the look-up `lagMs` after it was
 * made; a charge listed `processing` until then when `pendingWhileLagging`. Time passes on the shared manual clock.
 */
function scriptedProvider(
  clock: FakeClock,
  o: { lookupMs: number; timeoutMs: number; finishMs: number; lagMs: number; pendingWhileLagging?: boolean; postStatus?: number },
) {
  const made: Made[] = [];
  const fetchOf = async (_url: string | URL, init?: RequestInit): Promise<Response> => {
    if ((init?.method ?? 'GET') === 'GET') {
      clock.advance(o.lookupMs);
      const listed = made
        .filter((c) => clock.now >= c.visibleAtMs || (o.pendingWhileLagging && clock.now >= c.madeAtMs))
        .map((c) => ({ id: c.id, status: clock.now >= c.visibleAtMs ? 'succeeded' : 'processing', amount: 500, currency: 'EUR' }));
      return new Response(JSON.stringify({ data: listed }), { status: 200 });
    }
    if (o.postStatus !== undefined) return new Response('', { status: o.postStatus });
    // The provider takes the call in and works past the client's patience: the client times out, the charge lands.
    const madeAtMs = clock.now + o.timeoutMs + o.finishMs;
    made.push({ id: `ch_${made.length + 1}`, madeAtMs, visibleAtMs: madeAtMs + o.lagMs });
    clock.advance(o.timeoutMs);
    throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
  };
  return { made, fetch: fetchOf as unknown as typeof fetch };
}

let clock: FakeClock;
let store: InMemoryIdempotencyStore;
let t: ReturnType<typeof inMemoryTelemetry>;

beforeEach(() => {
  clock = new FakeClock();
  store = new InMemoryIdempotencyStore({ clock, leaseMs: 60_000 });
  t = inMemoryTelemetry();
});
afterEach(() => t.shutdown());

async function claimOf(): Promise<Claim> {
  const outcome = await store.claim(keyFromMessageId('payments', 'pay-1'), 'd'.repeat(64));
  if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  return outcome.claim;
}

const settingsWith = (extra: Record<string, string>) =>
  loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: 'http://provider.invalid', ...extra });

function activity(fetchOf: typeof fetch, timeoutMs: number, onRefused?: (status: number) => void) {
  const client = new PaymentProviderClient({ baseUrl: 'http://provider.invalid', timeoutMs, fetch: fetchOf, onRefused });
  return chargeProviderActivity(
    client,
    () => t.telemetry,
    () => store,
    () => clock.now,
  );
}

/** The money invariant, judged by the provider's ledger: no record says `failed` (not held) while a charge exists. */
async function recordDeniesCharge(made: readonly Made[]): Promise<boolean> {
  const record = await store.get(keyFromMessageId('payments', 'pay-1'));
  const result = record?.result as ChargeResult | undefined;
  const says =
    record?.status === RecordStatus.Completed && result && result.status !== 'succeeded' && !('code' in result && result.code === 'held-for-operator');
  return Boolean(says) && made.length > 0;
}

describe("a call's lease is sized by what a call can take", () => {
  test.each([
    ['the longest timeout the settings accept, a look-up that takes most of it', { PAYMENT_PROVIDER_TIMEOUT_MS: '120000' }, 110_000],
    ['the default timeout, a provider that finishes and indexes within what is declared', {}, 9_000],
  ])('%s: a copy that looks up, then POSTs, never lets a settle write failed before its charge shows', async (_name, extra, lookupMs) => {
    const settings = settingsWith(extra);
    const budget = retryBudgetOf(settings);
    const provider = scriptedProvider(clock, {
      lookupMs,
      timeoutMs: settings.PAYMENT_PROVIDER_TIMEOUT_MS,
      finishMs: settings.PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS * 1000,
      lagMs: settings.PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS * 1000,
    });
    const run = activity(provider.fetch, settings.PAYMENT_PROVIDER_TIMEOUT_MS);
    const claim = await claimOf();
    const call = { idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: budget.callLeaseMs, postWindowMs: budget.postWindowMs };
    // A copy of a round (an answered work item run again): it announces, looks up, then POSTs or is refused.
    await expect(run({ ...call, lookUpFirst: true }, {} as never)).rejects.toBeInstanceOf(Error);
    // The settle: tried as the run tries it (after a call's lease), until it is no longer refused for a call in flight.
    for (let tries = 0; tries < 10; tries++) {
      const record = await store.get(claim.key);
      clock.now = Math.max(clock.now, record!.leaseExpiresAtMs + 1);
      const settled = await (run({ ...call, lookUpOnly: { failedReason: 'budget spent' } }, {} as never) as Promise<RecordedCharge>).catch(() => undefined);
      if (settled) break;
    }
    expect(await recordDeniesCharge(provider.made)).toBe(false);
  });

  test('a POST is not sent when the lease left is shorter than its window: nothing charged, the round is retried', async () => {
    const settings = settingsWith({ PAYMENT_PROVIDER_TIMEOUT_MS: '120000' });
    const budget = retryBudgetOf(settings);
    // The look-up took so long that less than a POST's window is left of the lease.
    const lookupMs = budget.callLeaseMs! - budget.postWindowMs! + 1_000;
    const provider = scriptedProvider(clock, { lookupMs, timeoutMs: 120_000, finishMs: 60_000, lagMs: 60_000 });
    const run = activity(provider.fetch, 120_000);
    const claim = await claimOf();
    const error = await run(
      { idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: budget.callLeaseMs, postWindowMs: budget.postWindowMs, lookUpFirst: true },
      {} as never,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallLeaseSpentError);
    expect((error as CallLeaseSpentError).postWindowMs).toBe(budget.postWindowMs);
    expect(provider.made).toHaveLength(0);
  });

  test('a POST with exactly its window of lease left is sent: the provider gets the charge', async () => {
    const settings = settingsWith({ PAYMENT_PROVIDER_TIMEOUT_MS: '120000' });
    const budget = retryBudgetOf(settings);
    const provider = scriptedProvider(clock, { lookupMs: budget.callLeaseMs! - budget.postWindowMs!, timeoutMs: 120_000, finishMs: 60_000, lagMs: 60_000 });
    const run = activity(provider.fetch, 120_000);
    const claim = await claimOf();
    const answer = await run(
      { idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: budget.callLeaseMs, postWindowMs: budget.postWindowMs, lookUpFirst: true },
      {} as never,
    ).catch((e: unknown) => e);
    expect(answer).not.toBeInstanceOf(CallLeaseSpentError);
    expect(provider.made).toHaveLength(1);
  });

  test.each([
    ['a second less than its window left', (postWindowMs: number) => postWindowMs - 1_000],
    ['the lease lapsed a minute before the look-up answered', () => -60_000],
  ])('the refused POST (%s) says, in seconds, what was left of the lease (never below 0) and what a charge needs; retryable', async (_name, leftOf) => {
    const settings = settingsWith({ PAYMENT_PROVIDER_TIMEOUT_MS: '120000' });
    const budget = retryBudgetOf(settings);
    const leftMs = leftOf(budget.postWindowMs!);
    const provider = scriptedProvider(clock, { lookupMs: budget.callLeaseMs! - leftMs, timeoutMs: 120_000, finishMs: 60_000, lagMs: 60_000 });
    const run = activity(provider.fetch, 120_000);
    const claim = await claimOf();
    const error = (await run(
      { idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: budget.callLeaseMs, postWindowMs: budget.postWindowMs, lookUpFirst: true },
      {} as never,
    ).catch((e: unknown) => e)) as CallLeaseSpentError;
    expect(error).toBeInstanceOf(CallLeaseSpentError);
    expect(error.leaseLeftMs).toBe(leftMs);
    const leftSeconds = leftMs > 0 ? leftMs / 1000 : 0;
    expect(error.message).toBe(
      `not sending the charge: the call's lease has ${leftSeconds} s left and a charge needs ${budget.postWindowMs! / 1000} s to show in a look-up`,
    );
    expect(error.retryable).toBe(true);
    expect(provider.made).toHaveLength(0);
  });

  test('the lease covers two requests, the finish window, the look-up lag and a margin; settings it cannot fit are refused', () => {
    const budget = retryBudgetOf(
      settingsWith({ PAYMENT_PROVIDER_TIMEOUT_MS: '20000', PAYMENT_PROVIDER_FINISH_WINDOW_SECONDS: '40', PAYMENT_PROVIDER_LOOKUP_LAG_SECONDS: '90' }),
    );
    expect(budget.postWindowMs).toBe(20_000 + 40_000 + 90_000 + 30_000);
    expect(budget.callLeaseMs).toBe(20_000 + budget.postWindowMs!);
    // 6 min of key memory leaves 36 s untrusted: a repeat made at its start reaches the provider up to 10 s + 30 s later.
    expect(() => settingsWith({ PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '0.1' })).toThrow(/40 s after the trusted share ends.*not relied on \(36 s: 0.1 x/);
    expect(() => settingsWith({ PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '0.12' })).not.toThrow();
    // A budget of more rounds than a run's history holds: 60 min of rounds 1 s apart; 60 s apart still fits (63 rounds).
    expect(() => settingsWith({ PAYMENT_RETRY_FIRST_DELAY_SECONDS: '1', PAYMENT_RETRY_MAX_DELAY_SECONDS: '1' })).toThrow(/more than 64 provider rounds/);
    expect(() => settingsWith({ PAYMENT_RETRY_MAX_DELAY_SECONDS: '60' })).not.toThrow();
    expect(() => settingsWith({ PAYMENT_RETRY_BUDGET_MINUTES: '10080', PAYMENT_RETRY_MAX_DELAY_SECONDS: '86400' })).not.toThrow();
  });
});

describe("a look-up's not-final entry is a call in flight", () => {
  test('the settle finds the charge listed processing: no failed written, the settle is tried again', async () => {
    const provider = scriptedProvider(clock, { lookupMs: 100, timeoutMs: 10_000, finishMs: 0, lagMs: 10 * 60_000, pendingWhileLagging: true });
    const run = activity(provider.fetch, 10_000);
    const claim = await claimOf();
    const call = { idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: 60_000 };
    await expect(run(call, {} as never)).rejects.toBeInstanceOf(TransientProviderError);
    clock.now = (await store.get(claim.key))!.leaseExpiresAtMs + 1;
    await expect(run({ ...call, lookUpOnly: { failedReason: 'budget spent' } }, {} as never)).rejects.toBeInstanceOf(ChargeInFlightError);
    expect((await store.get(claim.key))!.status).toBe(RecordStatus.InProgress);
    expect(await recordDeniesCharge(provider.made)).toBe(false);
  });
});

describe("an answer from before the provider's idempotency is not a result", () => {
  const client = (status: number, body: string, onRefused?: (s: number) => void) =>
    new PaymentProviderClient({
      baseUrl: 'http://provider.invalid',
      timeoutMs: 1_000,
      fetch: async () => new Response(body, { status }),
      onRefused,
    });

  test.each([
    [401, '{"error":"unauthorized"}'],
    [403, '<html>forbidden</html>'],
    [404, ''],
    [405, ''],
    [429, '{"error":{"message":"too many requests"}}'],
    [400, '<html>bad request</html>'],
    [422, '{"errorCode":"704","message":"request already processed or in progress"}'],
  ])('%i with %j: ProviderRefusedError (retryable), counted by status', async (status, body) => {
    const refused: number[] = [];
    const error = await client(status, body, (s) => refused.push(s))
      .charge(payment, 'pay-1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect((error as ProviderRefusedError).retryable).toBe(true);
    expect(refused).toEqual([status]);
  });

  test("the provider's own answers stay results: 402 declined, 422 idempotency error, 400 with its error body", async () => {
    expect(await client(402, '{"error":{"code":"card_declined"},"reason":"card_declined"}').charge(payment, 'k')).toMatchObject({ status: 'declined' });
    expect(await client(422, '{"error":{"type":"idempotency_error","message":"other params"}}').charge(payment, 'k')).toMatchObject({
      status: 'rejected',
      code: 'idempotency-key-reused',
    });
    expect(await client(400, '{"error":{"type":"invalid_request_error","message":"amount must be positive"}}').charge(payment, 'k')).toMatchObject({
      status: 'rejected',
    });
  });

  test('round 0 charged (its answer lost), round 1 answered 401 by a rotated secret: not recorded rejected, counted, retried', async () => {
    const refused: number[] = [];
    const run = activity(
      async () => new Response('{"error":"invalid api key"}', { status: 401 }),
      10_000,
      (s) => refused.push(s),
    );
    const claim = await claimOf();
    const error = await run({ idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: 180_000 }, {} as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect((await store.get(claim.key))!.status).toBe(RecordStatus.InProgress);
    expect(refused).toEqual([401]);
  });
});

describe('a late success is an alarm', () => {
  const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_9', amount: 500, currency: 'EUR' };

  test('a succeeded answer meeting the record settled failed: counted, logged at error with the key and charge id', async () => {
    const claim = await claimOf();
    await store.complete(claim, { status: 'failed', reason: 'budget spent; no charge under the key (looked up)' });
    expect(await writeRecordOnce(store, () => t.telemetry, { claim, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(1);
    const alarm = t.logs().find((l) => l.attributes.outcome === 'charged-after-settle');
    expect(alarm?.severity).toBe('ERROR');
    expect(alarm?.attributes).toMatchObject({ idempotencyKey: 'pay-1', chargeId: 'ch_9', recordResult: 'failed' });
  });

  /** Attempt 1's claim, and the record taken over by attempt 2 (attempt 1's lease lapsed). */
  async function takenOver(): Promise<{ first: Claim; second: Claim }> {
    const first = await claimOf();
    clock.advance(60_001);
    const outcome = await store.claim(first.key, first.digest);
    if (outcome.kind !== 'reclaimed') throw new Error(outcome.kind);
    return { first, second: outcome.claim };
  }

  test('a succeeded answer meeting the record completed with that same charge by a newer attempt: no alarm', async () => {
    const { first, second } = await takenOver();
    await store.complete(second, charged);
    expect(await writeRecordOnce(store, () => t.telemetry, { claim: first, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(0);
  });

  test('a succeeded answer written by its own attempt: no alarm, even when the store cannot be read after the write', async () => {
    const claim = await claimOf();
    const unreadable = Object.assign(Object.create(store) as InMemoryIdempotencyStore, { get: () => Promise.reject(new Error('read timed out')) });
    expect(await writeRecordOnce(unreadable, () => t.telemetry, { claim, result: charged, payment })).toBe('completed');
    expect((await store.get(claim.key))!.result).toEqual(charged);
    expect(await t.counter('payments.charged_after_settle')).toBe(0);
  });

  test('a succeeded answer meeting the record still in progress under a newer attempt: no alarm (its run records it)', async () => {
    const { first } = await takenOver();
    expect(await writeRecordOnce(store, () => t.telemetry, { claim: first, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(0);
  });

  test('a succeeded answer meeting the record completed declined by a newer attempt: the alarm names it', async () => {
    const { first, second } = await takenOver();
    await store.complete(second, { status: 'declined', reason: 'card_declined' });
    await writeRecordOnce(store, () => t.telemetry, { claim: first, result: charged, payment });
    expect(await t.counter('payments.charged_after_settle')).toBe(1);
  });

  /** The alarm's log record (the only one), its message and attributes. */
  const alarmOf = () => {
    const alarms = t.logs().filter((l) => l.attributes.outcome === 'charged-after-settle');
    expect(alarms).toHaveLength(1);
    return { message: String(alarms[0].body), attributes: alarms[0].attributes };
  };
  const says = (what: string) =>
    `payments: charged after the record was settled otherwise: the provider charged ch_9 and the record says ${what}; check the charge at the provider, refund it or correct the record`;

  test('the alarm says what the record holds (status, result, attempt) and is counted and logged under the payments consumer', async () => {
    const claim = await claimOf();
    await store.complete(claim, { status: 'failed', reason: 'budget spent; no charge under the key (looked up)' });
    await writeRecordOnce(store, () => t.telemetry, { claim, result: charged, payment });
    expect(await t.counter('payments.charged_after_settle', { consumer: 'payments' })).toBe(1);
    expect(alarmOf()).toEqual({
      message: says('COMPLETED failed, attempt 1'),
      attributes: expect.objectContaining({ consumer: 'payments', recordStatus: 'COMPLETED', recordResult: 'failed', attempt: 1 }),
    });
  });

  test('a succeeded answer meeting the record completed succeeded with another charge of the same lifetime: two charges, the alarm', async () => {
    const claim = await claimOf();
    await store.complete(claim, { ...charged, chargeId: 'ch_1' });
    expect(await writeRecordOnce(store, () => t.telemetry, { claim, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(1);
    expect(alarmOf().message).toBe(says('COMPLETED succeeded, attempt 1'));
  });

  test('a declined or failed answer meeting the record settled otherwise: no alarm (no money was taken by it)', async () => {
    const claim = await claimOf();
    await store.complete(claim, { ...charged, chargeId: 'ch_1' });
    for (const result of [
      { status: 'declined', reason: 'card' },
      { status: 'failed', reason: 'budget spent' },
    ] as ChargeResult[])
      expect(await writeRecordOnce(store, () => t.telemetry, { claim, result, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(0);
  });

  /** Attempt 1's claim, and the key claimed again after its record expired: another lifetime (generation) of the key. */
  async function nextLifetime(): Promise<{ first: Claim; second: Claim }> {
    const first = await claimOf();
    clock.advance(31 * 86_400_000);
    const outcome = await store.claim(first.key, first.digest);
    if (outcome.kind !== 'claimed' && outcome.kind !== 'reclaimed') throw new Error(outcome.kind);
    expect(outcome.claim.createdAtMs).not.toBe(first.createdAtMs);
    return { first, second: outcome.claim };
  }

  test("a succeeded answer meeting a later lifetime of the key still in progress: the alarm (that run is not this call's)", async () => {
    const { first, second } = await nextLifetime();
    expect(await writeRecordOnce(store, () => t.telemetry, { claim: first, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(1);
    expect(alarmOf()).toEqual({
      message: says(`IN_PROGRESS, attempt ${second.attempt}, another generation`),
      attributes: expect.objectContaining({ recordStatus: 'IN_PROGRESS', recordResult: 'none' }),
    });
  });

  test('a succeeded answer meeting a later lifetime of the key completed with the same charge id: the alarm, naming the other generation', async () => {
    const { first, second } = await nextLifetime();
    await store.complete(second, charged);
    expect(await writeRecordOnce(store, () => t.telemetry, { claim: first, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(1);
    expect(alarmOf().message).toBe(says(`COMPLETED succeeded, attempt ${second.attempt}, another generation`));
  });

  test('a succeeded answer whose record cannot be read back: the alarm fires (nothing shows the record agrees), saying so', async () => {
    const claim = await claimOf();
    await store.complete(claim, { status: 'failed', reason: 'budget spent' });
    const unreadable = Object.assign(Object.create(store) as InMemoryIdempotencyStore, { get: () => Promise.reject(new Error('timeout')) });
    expect(await writeRecordOnce(unreadable, () => t.telemetry, { claim, result: charged, payment })).toBe('fenced');
    expect(await t.counter('payments.charged_after_settle')).toBe(1);
    expect(alarmOf()).toEqual({
      message: says('gone or unreadable'),
      attributes: expect.objectContaining({ recordStatus: 'none', recordResult: 'none', idempotencyKey: 'pay-1', chargeId: 'ch_9' }),
    });
  });
});

describe('a key memory that keeps only successes is not relied on for a repeat', () => {
  const young = { round: 1, entityUncertain: false, keyAgeMs: 60_000 };

  test('Checkout.com-like (only 2xx cached): a repeat after a failed round looks up first, or is held without a look-up', () => {
    expect(planProviderCall({ lookup: 'by-key', keyMemoryHours: 24, memoryKeepsOnlySuccesses: true }, young)).toEqual({ action: 'lookUpFirst' });
    expect(planProviderCall({ lookup: 'none', keyMemoryHours: 24, memoryKeepsOnlySuccesses: true }, young)).toMatchObject({
      action: 'hold',
      reason: expect.stringMatching(/replays only successes/),
    });
    // A memory that replays every answer (Stripe) is relied on for the same young key; a first call is never a repeat.
    expect(planProviderCall({ lookup: 'none', keyMemoryHours: 24 }, young)).toEqual({ action: 'charge' });
    expect(planProviderCall({ lookup: 'none', keyMemoryHours: 24, memoryKeepsOnlySuccesses: true }, { ...young, round: 0 })).toEqual({ action: 'charge' });
  });

  test('the setting declares it: successes -> the capability says so; every-answer (the default) -> it does not', () => {
    expect(providerCapabilityOf(settingsWith({ PAYMENT_PROVIDER_KEY_MEMORY_KEEPS: 'successes' })).memoryKeepsOnlySuccesses).toBe(true);
    expect(providerCapabilityOf(settingsWith({})).memoryKeepsOnlySuccesses).toBeUndefined();
  });

  test("a replay that answers the key's charge for another amount is not this payment's charge: a key reused, nothing charged", async () => {
    const replay = new PaymentProviderClient({
      baseUrl: 'http://provider.invalid',
      timeoutMs: 1_000,
      fetch: async () => new Response(JSON.stringify({ id: 'ch_other', status: 'succeeded', amount: 900, currency: 'EUR' }), { status: 200 }),
    });
    expect(await replay.charge(payment, 'pay-1')).toMatchObject({ status: 'rejected', code: 'idempotency-key-reused' });
  });
});

describe("a charge made before this payment's record is another payment's (an id reused after its record expired)", () => {
  const answer = (status: number, body: unknown) =>
    new PaymentProviderClient({
      baseUrl: 'http://provider.invalid',
      timeoutMs: 1_000,
      fetch: async () => new Response(JSON.stringify(body), { status }),
    });
  const old = { id: 'ch_old', status: 'succeeded', amount: 500, currency: 'EUR', created: 1_000 };

  test('a look-up does not list it as this payment’s charge; one made since is', async () => {
    expect(await answer(200, { data: [old] }).findCharge('pay-1', undefined, 2_000)).toBeUndefined();
    expect(await answer(200, { data: [old, { ...old, id: 'ch_new', created: 3_000 }] }).findCharge('pay-1', undefined, 2_000)).toMatchObject({
      chargeId: 'ch_new',
    });
    // Without the bound (runs started before it), as before.
    expect(await answer(200, { data: [old] }).findCharge('pay-1')).toMatchObject({ chargeId: 'ch_old' });
  });

  test('a replay of it answers the key reused, never this payment charged', async () => {
    expect(await answer(200, old).charge(payment, 'pay-1', undefined, 2_000)).toMatchObject({ status: 'rejected', code: 'idempotency-key-reused' });
    expect(await answer(201, { ...old, created: 3_000 }).charge(payment, 'pay-1', undefined, 2_000)).toMatchObject({ status: 'succeeded' });
  });
});

describe('a rejection after a call that may have charged is not the provider’s word about that charge', () => {
  const rejecting = {
    charge: async (): Promise<ChargeResult> => ({ status: 'rejected', reason: 'payment provider answered 400 (invalid_request_error: amount)' }),
    findCharge: async () => undefined,
  };

  test('a retry (mayRepeat) answered a validation 400: retried (ProviderRefusedError), never recorded rejected', async () => {
    const error = await chargeOnce(rejecting, { idempotencyKey: 'pay-1', payment, mayRepeat: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRefusedError);
  });

  test("a first call's rejection stands; a key reused (the idempotency layer's own answer) stands on a retry too", async () => {
    expect(await chargeOnce(rejecting, { idempotencyKey: 'pay-1', payment })).toMatchObject({ status: 'rejected' });
    const reused = { ...rejecting, charge: async (): Promise<ChargeResult> => ({ status: 'rejected', reason: 'other body', code: 'idempotency-key-reused' }) };
    expect(await chargeOnce(reused, { idempotencyKey: 'pay-1', payment, mayRepeat: true })).toMatchObject({ code: 'idempotency-key-reused' });
  });
});
