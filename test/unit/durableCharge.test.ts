/**
 * The charge's Durable bodies (src/app/durableCharge.ts) in memory, edge by edge (the Azurite integration tests
 * hold them end to end). The activity without a store,
 * a hold's fence and report (exact, never over a call that may still land), the settle's writes (a store fault thrown,
 * the lease left of a call raced in), the record write's reports (failed, refused, retried, lost answers) with the attributes the alerts
 * and the monitoring queries filter on, and the orchestrator's and entity's wiring to the Durable context.
 */
import type * as df from 'durable-functions';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { LeaseLostError, StoreRequestError, StoreUnavailableError, keyFromMessageId, type Claim, type IdempotencyStore } from 'azure-functions-idempotency';
import {
  CallInFlightError,
  chargePaymentOrchestrator,
  chargeProviderActivity,
  completeRecordActivity,
  heldReporter,
  mayHaveLanded,
  paymentChargeEntity,
  writeRecordOnce,
} from '../../src/app/durableCharge';
import type { ChargeActivityInput } from '../../src/payments/chargeInputs';
import type { RecordedCharge } from '../../src/payments/completeRecord';
import { HANDOFF_VERSION } from '../../src/payments/handOffPlan';
import { LookupUnsupportedError, type PaymentProviderClient } from '../../src/payments/PaymentProviderClient';
import type { ChargeResult } from '../../src/payments/schema';
import { FakeClock } from '../support/tables';
import { inMemoryTelemetry } from '../support/telemetry';

const payment = { paymentId: 'pay-1', customerId: 'c1', amount: 500, currency: 'EUR' };
const charged: ChargeResult = { status: 'succeeded', chargeId: 'ch_1', amount: 500, currency: 'EUR' };
const failed: ChargeResult = { status: 'failed', reason: 'budget spent' };
const LEASE_MS = 60_000;

let clock: FakeClock;
let store: InMemoryIdempotencyStore;
let t: ReturnType<typeof inMemoryTelemetry>;
let charges: number;
let findCharge: () => Promise<ChargeResult | undefined>;
const provider = {
  charge: async () => (charges++, charged),
  findCharge: () => findCharge(),
} as unknown as PaymentProviderClient;

beforeEach(() => {
  clock = new FakeClock();
  store = new InMemoryIdempotencyStore({ clock, leaseMs: 1_000 });
  t = inMemoryTelemetry();
  charges = 0;
  findCharge = async () => undefined;
});
afterEach(() => t.shutdown());

async function claimOf(id = 'pay-1'): Promise<Claim> {
  const outcome = await store.claim(keyFromMessageId('payments', id), 'd'.repeat(64));
  if (outcome.kind !== 'claimed') throw new Error(outcome.kind);
  return outcome.claim;
}
const storeWith = (overrides: Partial<IdempotencyStore>): IdempotencyStore => Object.assign(Object.create(store) as IdempotencyStore, overrides);
const activityOn = (s: IdempotencyStore | undefined) =>
  chargeProviderActivity(
    provider,
    () => t.telemetry,
    s && (() => s),
    () => clock.now,
    async (ms) => clock.advance(ms),
  );
const run = (s: IdempotencyStore | undefined, claim: Claim, extra: object = {}) =>
  activityOn(s)({ idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: LEASE_MS, ...extra }, {} as never) as Promise<RecordedCharge>;
const logLines = () => t.logs().map((l) => ({ severity: l.severity, body: l.body, ...l.attributes }));

describe('chargeProvider activity with the record claim', () => {
  test('no store while the run asks for the record write: refused, nothing charged', async () => {
    await expect(run(undefined, await claimOf())).rejects.toThrow('chargeProvider: a run asked for the record write and the activity has no store');
    expect(charges).toBe(0);
  });

  test("a hold's exact write refused, a newer attempt owning the record when read again: what the record says, not reported as held", async () => {
    let reads = 0;
    const fenced = storeWith({
      complete: () => Promise.reject(new LeaseLostError('payments:pay-1', 1, 'complete')),
      get: async (key) => {
        const record = await store.get(key);
        return ++reads === 1 || !record ? record : { ...record, attempt: record.attempt + 1 };
      },
    });
    const answered = await run(fenced, await claimOf(), { hold: 'no look-up' });
    expect(answered).toMatchObject({ result: { status: 'failed', reason: expect.stringContaining('the record moved on') as string }, record: 'fenced' });
    expect(await t.counter('payments.held')).toBe(0);
  });

  test('a hold while a call announced since the claim may still land: not written (CallInFlightError with its lease); once it lapsed, held', async () => {
    const claim = await claimOf();
    await store.renewLease(claim, LEASE_MS); // a copy of an earlier round announced its call: its charge may still land
    await expect(run(store, claim, { hold: 'no look-up' })).rejects.toThrow(new CallInFlightError(LEASE_MS));
    expect(await t.counter('payments.held')).toBe(0);
    expect((await store.get(claim.key))!.status).toBe('IN_PROGRESS');
    clock.advance(LEASE_MS + 1);
    expect(await run(store, claim, { hold: 'no look-up' })).toMatchObject({ result: { code: 'held-for-operator' }, record: 'completed' });
    expect(await t.counter('payments.held')).toBe(1);
  });

  test("a hold's exact write refused by a call announced between its read and its write: CallInFlightError, nothing held", async () => {
    const claim = await claimOf();
    const raced = storeWith({
      complete: async (...args: Parameters<IdempotencyStore['complete']>) => {
        await store.renewLease(claim, LEASE_MS); // nothing written since the claim: its version is current
        return store.complete(...args);
      },
    });
    await expect(run(raced, claim, { hold: 'no look-up' })).rejects.toBeInstanceOf(CallInFlightError);
    expect(await t.counter('payments.held')).toBe(0);
    expect((await store.get(claim.key))!.status).toBe('IN_PROGRESS');
  });

  test("a provider's answer whose record write the store did not answer: written on a later try while the call's lease runs (it may exist nowhere else)", async () => {
    const claim = await claimOf();
    let tries = 0;
    const flaky = storeWith({
      complete: (...args: Parameters<IdempotencyStore['complete']>) =>
        ++tries <= 2 ? Promise.reject(new StoreUnavailableError('timeout', 'complete')) : store.complete(...args),
    });
    expect(await run(flaky, claim)).toEqual({ result: charged, record: 'completed' });
    expect(tries).toBe(3);
    expect(charges).toBe(1);
    expect(await t.counter('payments.held')).toBe(0);
    expect((await store.get(claim.key))!.status).toBe('COMPLETED');
    // The store away for the whole lease: `unwritten` (the run, if it listens, writes it on durable timers).
    const other = await claimOf('pay-2');
    let downTries = 0;
    const down = storeWith({ complete: () => (downTries++, Promise.reject(new StoreUnavailableError('timeout', 'complete'))) });
    expect(await run(down, other, { idempotencyKey: 'pay-2' })).toEqual({ result: charged, record: 'unwritten' });
    expect(downTries).toBe(4);
    // One warning for the write left to the run, none for the tries that landed later.
    expect(t.logs().filter((l) => l.attributes.outcome === 'recordWriteRetry')).toEqual([
      expect.objectContaining({ severity: 'WARN', attributes: expect.objectContaining({ idempotencyKey: 'pay-2' }) as unknown }),
    ]);
  });

  test("a provider's answer's record write is not tried past the call's lease: with 3 s of it, one more try after 1 s, then unwritten", async () => {
    const claim = await claimOf();
    let tries = 0;
    const down = storeWith({ complete: () => (tries++, Promise.reject(new StoreUnavailableError('timeout', 'complete'))) });
    expect(await run(down, claim, { callLeaseMs: 3_000 })).toEqual({ result: charged, record: 'unwritten' });
    expect(tries).toBe(2);
    expect(charges).toBe(1);
  });

  test("the activity's own wait between two tries of the record write is real time (1 s)", async () => {
    const claim = await claimOf();
    const triedAt: number[] = [];
    const flaky = storeWith({
      complete: (...args: Parameters<IdempotencyStore['complete']>) =>
        triedAt.push(performance.now()) === 1 ? Promise.reject(new StoreUnavailableError('timeout', 'complete')) : store.complete(...args),
    });
    const activity = chargeProviderActivity(
      provider,
      () => t.telemetry,
      () => flaky,
      () => clock.now,
    );
    const input = { idempotencyKey: 'pay-1', payment, recordClaim: claim, callLeaseMs: LEASE_MS };
    expect(await activity(input, {} as never)).toEqual({ result: charged, record: 'completed' });
    expect(triedAt).toHaveLength(2);
    expect(triedAt[1] - triedAt[0]).toBeGreaterThanOrEqual(950);
  });

  test('a hold whose exact write the store did not answer: unwritten (the run writes it on its timers), not taken for a call in flight, not reported held', async () => {
    const claim = await claimOf();
    const down = storeWith({ complete: () => Promise.reject(new StoreUnavailableError('timeout', 'complete')) });
    expect(await run(down, claim, { hold: 'no look-up' })).toMatchObject({ result: { code: 'held-for-operator' }, record: 'unwritten' });
    expect(await t.counter('payments.held')).toBe(0);
    expect(charges).toBe(0);
  });

  test("a write the store refuses, or a hold's write it did not answer: no retry warning of the activity's own (only what writeRecordOnce says)", async () => {
    const refused = storeWith({ complete: () => Promise.reject(new StoreRequestError('forbidden', 'complete', 403)) });
    expect(await run(refused, await claimOf())).toEqual({ result: charged, record: 'unwritten' });
    expect(t.logs().filter((l) => l.attributes.outcome === 'recordWriteRetry')).toEqual([]);
    const down = storeWith({ complete: () => Promise.reject(new StoreUnavailableError('timeout', 'complete')) });
    expect(await run(down, await claimOf('pay-2'), { idempotencyKey: 'pay-2', hold: 'no look-up' })).toMatchObject({ record: 'unwritten' });
    expect(t.logs().filter((l) => l.attributes.outcome === 'recordWriteRetry')).toHaveLength(1);
  });

  test('a hold for a record that moved on (completed): the record answers, nothing written, nothing reported', async () => {
    const claim = await claimOf();
    await store.complete(claim, charged);
    expect(await run(store, claim, { hold: 'no look-up' })).toEqual({ result: charged, record: 'fenced' });
    expect(await t.counter('payments.held')).toBe(0);
  });

  test('a settle whose look-up failed while a call was marked meanwhile: not held over it (its charge may land after the alert); held once it lapsed', async () => {
    const claim = await claimOf();
    clock.advance(5_000); // the claim's lease has lapsed: the settle may look up
    findCharge = async () => {
      await store.renewLease(claim, LEASE_MS); // a late copy of a round marks its call while the look-up runs
      throw new Error('lookup 503');
    };
    await expect(run(store, claim, { lookUpOnly: { failedReason: 'budget spent' } })).rejects.toBeInstanceOf(CallInFlightError);
    expect(await t.counter('payments.held')).toBe(0);
    clock.advance(LEASE_MS + 1);
    findCharge = () => Promise.reject(new Error('lookup 503'));
    const settled = await run(store, claim, { lookUpOnly: { failedReason: 'budget spent' } });
    expect(settled).toMatchObject({ result: { status: 'failed', code: 'held-for-operator' }, record: 'completed' });
    expect(await t.counter('payments.held')).toBe(1);
  });

  test("a settle's exact write the store does not take: its error, not a call in flight", async () => {
    const claim = await claimOf();
    clock.advance(5_000);
    const down = storeWith({ complete: () => Promise.reject(new StoreUnavailableError('timeout', 'complete')) });
    await expect(run(down, claim, { lookUpOnly: { failedReason: 'budget spent' } })).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  test("a settle's exact write refused by a call marked in between: CallInFlightError with that call's lease left", async () => {
    const claim = await claimOf();
    clock.advance(5_000);
    const raced = storeWith({
      complete: async (...args: Parameters<IdempotencyStore['complete']>) => {
        await store.renewLease(claim, LEASE_MS);
        return store.complete(...args);
      },
    });
    const error = await run(raced, claim, { lookUpOnly: { failedReason: 'budget spent' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallInFlightError);
    expect((error as CallInFlightError).leaseLeftMs).toBe(LEASE_MS);
  });
});

describe('the reports an operator is alerted by', () => {
  test('held: counted and logged as an error with the key and reason', async () => {
    heldReporter(() => t.telemetry).held({ idempotencyKey: 'pay-1', payment }, 'why');
    expect(await t.counter('payments.held', { consumer: 'payments' })).toBe(1);
    expect(logLines()).toEqual([
      { severity: 'ERROR', body: 'payments: held for an operator (why)', consumer: 'payments', outcome: 'held', idempotencyKey: 'pay-1', reason: 'why' },
    ]);
  });

  test("held in a handoff run (the record's claim rides along): the log names the attempt too", async () => {
    const recordClaim = { attempt: 3 } as Claim;
    heldReporter(() => t.telemetry).held({ idempotencyKey: 'pay-1', payment, recordClaim } as ChargeActivityInput, 'why');
    expect(logLines()).toEqual([
      {
        severity: 'ERROR',
        body: 'payments: held for an operator (why)',
        consumer: 'payments',
        outcome: 'held',
        idempotencyKey: 'pay-1',
        attempt: 3,
        reason: 'why',
      },
    ]);
  });

  test("lookup unsupported in a handoff run (the record's claim rides along): counted with its status, the payment held", async () => {
    findCharge = () => Promise.reject(new LookupUnsupportedError(404));
    const answered = await run(store, await claimOf(), { lookUpFirst: true });
    expect(answered.result).toMatchObject({ status: 'failed', code: 'held-for-operator' });
    expect(await t.counter('payments.provider.lookup_unsupported', { consumer: 'payments', statusCode: 404 } as never)).toBe(1);
    expect(charges).toBe(0);
  });

  test('lookup unsupported: counted every time with its status, the configuration error logged once', async () => {
    const reporter = heldReporter(() => t.telemetry);
    reporter.lookupUnsupported({ idempotencyKey: 'pay-1', payment }, 404);
    reporter.lookupUnsupported({ idempotencyKey: 'pay-2', payment }, 404);
    expect(await t.counter('payments.provider.lookup_unsupported', { consumer: 'payments', statusCode: 404 } as never)).toBe(2);
    expect(logLines()).toEqual([
      {
        severity: 'ERROR',
        body:
          'payments: configuration error: the provider answered 404 to a charge look-up, so it offers none; set PAYMENT_PROVIDER_LOOKUP=none ' +
          '(payments that need a look-up are held for an operator meanwhile)',
        consumer: 'payments',
        outcome: 'lookup-unsupported',
        idempotencyKey: 'pay-1',
        statusCode: 404,
      },
    ]);
  });
});

describe('writeRecordOnce and the completePaymentRecord activity', () => {
  const input = (claim: Claim, result: ChargeResult, exact?: boolean) => ({ claim, result, payment, ...(exact ? { exact } : {}) });

  test('the activity writes the record: completed, a failed payment counted and logged once', async () => {
    const claim = await claimOf();
    expect(
      await completeRecordActivity(
        () => store,
        () => t.telemetry,
      )(input(claim, failed), {} as never),
    ).toBe('completed');
    expect(await store.get(claim.key)).toMatchObject({ status: 'COMPLETED', result: failed });
    expect(await t.counter('payments.failed', { consumer: 'payments' })).toBe(1);
    expect(logLines()).toEqual([
      {
        severity: 'ERROR',
        body: 'payments: failed (budget spent)',
        consumer: 'payments',
        outcome: 'failed',
        idempotencyKey: 'pay-1',
        attempt: 1,
        reason: 'budget spent',
      },
    ]);
  });

  test("the run's hold on durable timers: not written while a call announced since the claim may still land (its charge could follow the alert); once it lapsed, on the version read", async () => {
    const held: ChargeResult = { status: 'failed', reason: 'held for an operator: check the key at the provider', code: 'held-for-operator' };
    const recordActivity = completeRecordActivity(
      () => store,
      () => t.telemetry,
      () => clock.now,
    );
    const claim = await claimOf();
    await store.renewLease(claim, LEASE_MS); // a copy of a round announced its call after the settle gave up
    await expect(recordActivity(input(claim, held), {} as never)).rejects.toThrow(new CallInFlightError(LEASE_MS));
    expect(await store.get(claim.key)).toMatchObject({ status: 'IN_PROGRESS' });
    expect(await t.counter('payments.failed', { consumer: 'payments' })).toBe(0);
    clock.advance(LEASE_MS + 1);
    expect(await recordActivity(input(claim, held), {} as never)).toBe('completed');
    expect(await store.get(claim.key)).toMatchObject({ status: 'COMPLETED', result: held });
    expect(await t.counter('payments.failed', { consumer: 'payments' })).toBe(1);
    // Written: the same hold again is left alone (the record moved on), and so is a record a call's success completed.
    expect(await recordActivity(input(claim, held), {} as never)).toBe('fenced');
    const other = await claimOf('pay-2');
    const late = await store.renewLease(other, LEASE_MS);
    await store.complete(late, charged);
    expect(await recordActivity(input(other, held), {} as never)).toBe('fenced');
    expect(await store.get(other.key)).toMatchObject({ status: 'COMPLETED', result: charged });
    expect(await t.counter('payments.failed', { consumer: 'payments' })).toBe(1);
  });

  test("the run's failure after its budget (not a hold) waits for an announced call too: a failed record is never written under a call that may still charge", async () => {
    const recordActivity = completeRecordActivity(
      () => store,
      () => t.telemetry,
      () => clock.now,
    );
    const claim = await claimOf();
    await store.renewLease(claim, LEASE_MS);
    await expect(recordActivity(input(claim, failed), {} as never)).rejects.toBeInstanceOf(CallInFlightError);
    expect(await store.get(claim.key)).toMatchObject({ status: 'IN_PROGRESS' });
    clock.advance(LEASE_MS + 1);
    expect(await recordActivity(input(claim, failed), {} as never)).toBe('completed');
    expect(await store.get(claim.key)).toMatchObject({ status: 'COMPLETED', result: failed });
  });

  test("the run's write of a charge is not held back by an announced call (a same-key call can only replay it): written at once", async () => {
    const recordActivity = completeRecordActivity(
      () => store,
      () => t.telemetry,
      () => clock.now,
    );
    const claim = await claimOf();
    await store.renewLease(claim, LEASE_MS);
    expect(await recordActivity(input(claim, charged), {} as never)).toBe('completed');
    expect(await store.get(claim.key)).toMatchObject({ status: 'COMPLETED', result: charged });
  });

  test("the run's hold whose write the store did not answer: the store's error (the run's timers try again), not a call in flight", async () => {
    const held: ChargeResult = { status: 'failed', reason: 'held for an operator', code: 'held-for-operator' };
    const claim = await claimOf();
    const down = storeWith({ complete: () => Promise.reject(new StoreUnavailableError('timeout', 'complete')) });
    const recordActivity = completeRecordActivity(
      () => down,
      () => t.telemetry,
      () => clock.now,
    );
    await expect(recordActivity(input(claim, held), {} as never)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.get(claim.key)).toMatchObject({ status: 'IN_PROGRESS' });
  });

  test("the run's hold refused by a call announced between its read and its write: CallInFlightError, nothing written", async () => {
    const held: ChargeResult = { status: 'failed', reason: 'held for an operator', code: 'held-for-operator' };
    const claim = await claimOf();
    const raced = storeWith({
      complete: async (...args: Parameters<IdempotencyStore['complete']>) => {
        await store.renewLease(claim, LEASE_MS);
        return store.complete(...args);
      },
    });
    const recordActivity = completeRecordActivity(
      () => raced,
      () => t.telemetry,
      () => clock.now,
    );
    await expect(recordActivity(input(claim, held), {} as never)).rejects.toBeInstanceOf(CallInFlightError);
    expect(await store.get(claim.key)).toMatchObject({ status: 'IN_PROGRESS' });
    expect(await t.counter('payments.failed', { consumer: 'payments' })).toBe(0);
  });

  test('a failed write fenced by a newer attempt: not reported', async () => {
    const fenced = storeWith({ complete: () => Promise.reject(new LeaseLostError('payments:pay-1', 1, 'complete')) });
    expect(await writeRecordOnce(fenced, () => t.telemetry, input(await claimOf(), failed))).toBe('fenced');
    expect(await t.counter('payments.failed')).toBe(0);
  });

  test('an exact write refused: thrown, nothing logged (the settle decides)', async () => {
    const refused = storeWith({ complete: () => Promise.reject(new LeaseLostError('payments:pay-1', 1, 'complete')) });
    await expect(writeRecordOnce(refused, () => t.telemetry, input(await claimOf(), failed, true))).rejects.toBeInstanceOf(LeaseLostError);
    expect(t.logs()).toEqual([]);
  });

  test("a failed payment's write whose answer was lost is reported (it may have landed); one that did not land is not", async () => {
    const claim = await claimOf();
    const lost = storeWith({ complete: () => Promise.reject(new StoreUnavailableError('reset', 'complete', undefined, true)) });
    await expect(writeRecordOnce(lost, () => t.telemetry, input(claim, failed))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await t.counter('payments.failed')).toBe(1);
    const down = storeWith({ complete: () => Promise.reject(new StoreUnavailableError('timeout', 'complete')) });
    await expect(writeRecordOnce(down, () => t.telemetry, input(claim, failed))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await t.counter('payments.failed')).toBe(1);
  });

  test('the retry warning and the refusal name the error (cut at 500), with the consumer, the key and the status', async () => {
    const claim = await claimOf();
    const failing = (error: Error) => storeWith({ complete: () => Promise.reject(error) });
    await writeRecordOnce(failing(new StoreUnavailableError('timeout', 'complete')), () => t.telemetry, input(claim, charged)).catch(() => undefined);
    await writeRecordOnce(failing(new StoreRequestError('forbidden', 'complete', 403)), () => t.telemetry, input(claim, charged)).catch(() => undefined);
    await writeRecordOnce(failing(new StoreUnavailableError('w'.repeat(600), 'complete')), () => t.telemetry, input(claim, charged)).catch(() => undefined);
    await writeRecordOnce(failing(new StoreRequestError('v'.repeat(600), 'complete', 404)), () => t.telemetry, input(claim, charged)).catch(() => undefined);
    const [warn, refused, longWarn, longRefused] = logLines();
    expect(warn).toEqual({
      severity: 'WARN',
      body: 'payments: record write failed, the run retries it (StoreUnavailableError: timeout)',
      consumer: 'payments',
      outcome: 'recordWriteRetry',
      idempotencyKey: 'pay-1',
      attempt: 1,
    });
    expect(refused).toEqual({
      severity: 'ERROR',
      body: 'payments: the record write was refused (StoreRequestError: forbidden); the run retries it until the store is fixed',
      consumer: 'payments',
      outcome: 'record-write-refused',
      idempotencyKey: 'pay-1',
      attempt: 1,
      statusCode: 403,
    });
    expect([(longWarn.body as string).length, (longRefused.body as string).length]).toEqual([500, 500]);
    expect(await t.counter('payments.record_write_refused', { consumer: 'payments', statusCode: 403 } as never)).toBe(1);
  });

  test('mayHaveLanded: only a StoreUnavailableError that says so', () => {
    expect(mayHaveLanded(new StoreUnavailableError('reset', 'complete', undefined, true))).toBe(true);
    expect(mayHaveLanded(new StoreUnavailableError('timeout', 'complete'))).toBe(false);
    expect(mayHaveLanded(Object.assign(new Error('x'), { writeMayHaveLanded: true }))).toBe(false);
  });
});

describe('the Durable wiring', () => {
  test('the entity applies the operation to its state and answers', () => {
    let state: unknown;
    let reply: unknown;
    const context = {
      df: {
        getInput: () => ({ name: 'begin', attempt: 1 }),
        operationName: 'begin',
        getState: () => undefined,
        setState: (s: unknown) => void (state = s),
        return: (r: unknown) => void (reply = r),
      },
    };
    paymentChargeEntity(context as never);
    expect(state).toMatchObject({ status: 'inProgress', attempt: 1 });
    expect(reply).toEqual({ decision: 'proceed' });
  });

  test('a version 2 run signals the entity one-way, and rolls its record write over with continueAsNew', () => {
    const signals: unknown[] = [];
    const continued: unknown[] = [];
    const claim = { key: { consumer: 'payments', key: 'pay-1' }, attempt: 1, ownerId: 'o1' } as Claim;
    const retry = { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 5_000 };
    const plan = { version: HANDOFF_VERSION, claim, retry, recordRoundsPerExecution: 1 };
    const context = {
      df: {
        getInput: () => ({ idempotencyKey: 'pay-1', entityKey: 'e1', attempt: 1, payment, handoff: plan }),
        callEntity: (id: df.EntityId, name: string) => ({ entity: id.key, name }),
        callActivity: (name: string) => ({ activity: name }),
        signalEntity: (id: df.EntityId, name: string, op: unknown) => void signals.push([id.name, id.key, name, op]),
        createTimer: (at: Date) => ({ timer: at.getTime() }),
        currentUtcDateTime: new Date(1_000_000),
        continueAsNew: (next: unknown) => void continued.push(next),
      },
    };
    const orchestration = chargePaymentOrchestrator(context as never);
    expect(orchestration.next().value).toEqual({ entity: 'e1', name: 'begin' });
    expect(orchestration.next({ decision: 'proceed' }).value).toEqual({ activity: 'chargeProvider' });
    expect(orchestration.next({ result: charged, record: 'unwritten' }).value).toEqual({ activity: 'completePaymentRecord' });
    expect(signals).toEqual([['paymentCharge', 'e1', 'complete', { name: 'complete', attempt: 1, result: charged }]]);
    expect(orchestration.throw(new StoreUnavailableError('down', 'complete')).value).toEqual({ timer: 1_001_000 });
    expect(orchestration.next().done).toBe(true);
    expect(continued).toEqual([expect.objectContaining({ recordWrite: { result: charged, startedMs: 1_000_000, round: 1 } })]);
  });
});
