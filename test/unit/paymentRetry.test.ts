/**
 * The operator's retry of a failed payment, and the reconciler's takeover through it (src/app/paymentRetry.ts), in
 * memory (test/integration/paymentRetry.test.ts holds it on Azurite).
 * Each test asserts what the operator is told, what the record becomes and what the new run is started with.
 */
import { keyFromMessageId, payloadDigest, RecordStatus, type IdempotencyRecord } from 'azure-functions-idempotency';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/memory';
import { PaymentRetryRefusedError, reopenableByRetry, retryFailedPayment, type PaymentRetryDeps } from '../../src/app/paymentRetry';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { finishedPaymentRow, paymentRow } from '../../src/payments/paymentRow';
import type { ChargeResult } from '../../src/payments/schema';

const payment = { paymentId: 'pay-retry', customerId: 'cust-1', amount: 1250, currency: 'EUR' };
const key = keyFromMessageId('payments', payment.paymentId);
const T0 = Date.UTC(2026, 0, 1);
const retry = { budgetMs: 600_000, firstDelayMs: 1_000, maxDelayMs: 60_000 };

async function rig(ending?: ChargeResult, options: { row?: boolean } = {}) {
  const time = { now: T0 };
  const store = new InMemoryIdempotencyStore({ clock: { nowMs: () => time.now }, leaseMs: 30_000 });
  const claimed = await store.claim(key, payloadDigest(payment), { effects: options.row === false ? [] : [paymentRow(payment, 'pending')] });
  if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
  if (ending) await store.complete(claimed.claim, ending, options.row === false ? [] : [finishedPaymentRow(payment, ending)]);
  const started: Array<{ instanceId: string; input: ChargeOrchestrationInput }> = [];
  const deps: PaymentRetryDeps = {
    store,
    start: async (instanceId, input) => (started.push({ instanceId, input }), 'started'),
    retry,
    nowMs: () => time.now,
  };
  return { time, store, started, deps };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => new Error('not refused'),
    (e: unknown) => e as Error,
  );

describe('reopenableByRetry', () => {
  const failed: Pick<IdempotencyRecord, 'consumer' | 'status' | 'result'> = {
    consumer: 'payments',
    status: RecordStatus.Completed,
    result: { status: 'failed', reason: 'x' },
  };
  test('only a payments record completed with a failed charge', () => {
    expect(reopenableByRetry(failed)).toBe(true);
    expect(reopenableByRetry({ ...failed, consumer: 'orders' })).toBe(false);
    expect(reopenableByRetry({ ...failed, status: RecordStatus.InProgress })).toBe(false);
    expect(reopenableByRetry({ ...failed, result: { status: 'succeeded', chargeId: 'c' } })).toBe(false);
    expect(reopenableByRetry({ ...failed, result: undefined })).toBe(false);
  });
});

describe('retryFailedPayment', () => {
  test('a failed payment is reopened and claimed again (attempt 2, Payment row pending) and its lifetime’s run started with the same key', async () => {
    const r = await rig({ status: 'failed', reason: 'provider down for 60 min' });
    r.time.now += 3_600_000;
    const report = await retryFailedPayment(r.deps, payment.paymentId);
    const record = await r.store.get(key);
    const entityKey = chargeEntityKey(record!.recordId, record!.createdAtMs, record!.digest);
    expect(report).toEqual({
      paymentId: payment.paymentId,
      instanceId: chargeInstanceId(entityKey),
      attempt: 2,
      previous: 'failed: provider down for 60 min',
      started: 'started',
    });
    expect(record).toMatchObject({ status: RecordStatus.InProgress, attempt: 2 });
    expect(await r.store.readLocalRow(key, 'payment')).toMatchObject({ state: 'pending' });
    expect(r.started).toHaveLength(1);
    expect(r.started[0].input).toMatchObject({
      idempotencyKey: payment.paymentId,
      entityKey,
      digest: payloadDigest(payment),
      attempt: 2,
      payment,
      correlationId: `operator-retry-${payment.paymentId}`,
      provider: { lookup: 'none', keyMemoryHours: 24 },
      keyAgeAtStartMs: r.time.now - record!.createdAtMs,
      keyOriginMs: record!.createdAtMs,
    });
    expect(r.started[0].input.handoff).toMatchObject({ retry, claim: { attempt: 2 } });
  });

  test('checked at the provider: the run treats the key as fresh (age 0, origin now); the origin and capability given are used', async () => {
    const r = await rig({ status: 'failed', reason: 'held for an operator' });
    r.time.now += 86_400_000;
    await retryFailedPayment({ ...r.deps, checkedAtProvider: true, origin: 'ops', provider: { lookup: 'by-key', keyMemoryHours: 48 } }, payment.paymentId);
    expect(r.started[0].input).toMatchObject({
      keyAgeAtStartMs: 0,
      keyOriginMs: r.time.now,
      correlationId: `ops-${payment.paymentId}`,
      provider: { lookup: 'by-key', keyMemoryHours: 48 },
    });
  });

  test('without a clock the key’s age is measured with the real time', async () => {
    const r = await rig({ status: 'failed', reason: 'x' });
    await retryFailedPayment({ ...r.deps, nowMs: undefined }, payment.paymentId);
    expect(Math.abs(r.started[0].input.keyAgeAtStartMs! - (Date.now() - T0))).toBeLessThan(60_000);
  });

  test.each([
    [{ status: 'succeeded', chargeId: 'ch-1' }, 'succeeded'],
    [{ status: 'declined', reason: 'card' }, 'declined'],
  ] as Array<[ChargeResult, string]>)('a payment that did not fail (%o) is refused, unchanged', async (ending, name) => {
    const r = await rig(ending);
    const error = await refusal(retryFailedPayment(r.deps, payment.paymentId));
    expect(error).toBeInstanceOf(PaymentRetryRefusedError);
    expect(error.message).toBe(`payment ${payment.paymentId} did not fail (${name}): only a failed payment is retried`);
    expect((error as PaymentRetryRefusedError).retryable).toBe(false);
    expect(await r.store.get(key)).toMatchObject({ status: RecordStatus.Completed, attempt: 1 });
    expect(r.started).toEqual([]);
  });

  test('a payment record completed without a result: refused, saying it has none', async () => {
    const r = await rig();
    const claimed = await r.store.claim(keyFromMessageId('payments', 'pay-bare'), payloadDigest(payment));
    if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
    await r.store.complete(claimed.claim, undefined);
    const error = await refusal(retryFailedPayment(r.deps, 'pay-bare'));
    expect(error.message).toBe('payment pay-bare did not fail (no result): only a failed payment is retried');
  });

  test('no record: refused, saying so', async () => {
    const r = await rig();
    await expect(retryFailedPayment(r.deps, 'pay-never')).rejects.toThrow(
      'payment pay-never has no record (never received, or swept after its retention): nothing to retry',
    );
  });

  test('a Payment row missing, or not matching the record’s digest: refused before anything is written', async () => {
    const r = await rig({ status: 'failed', reason: 'x' }, { row: false });
    await expect(retryFailedPayment(r.deps, payment.paymentId)).rejects.toThrow(
      `payment ${payment.paymentId}: its Payment row is missing or does not match the record's digest; resubmit its message instead`,
    );
    const other = await rig({ status: 'failed', reason: 'x' });
    const record = (await other.store.get(key))!;
    await other.store.reopen(record, 'test');
    const again = await other.store.claim(key, record.digest, { effects: [paymentRow({ ...payment, amount: 1 }, 'pending')] });
    if (again.kind !== 'reclaimed') throw new Error(again.kind);
    await other.store.complete(again.claim, { status: 'failed', reason: 'x' });
    await expect(retryFailedPayment(other.deps, payment.paymentId)).rejects.toThrow('does not match the record');
    expect((await other.store.get(key))!.status).toBe(RecordStatus.Completed);
  });

  test('the reopen gives the store its reason: an operator retry, and how the payment had ended', async () => {
    const r = await rig({ status: 'failed', reason: 'provider down for 60 min' });
    const reasons: string[] = [];
    const reopen = r.store.reopen.bind(r.store);
    r.store.reopen = async (record, reason) => (reasons.push(reason), reopen(record, reason));
    await retryFailedPayment(r.deps, payment.paymentId);
    expect(reasons).toEqual(['operator retry; it had failed: provider down for 60 min']);
  });

  test('the record completed by another delivery between the reopen and the claim: refused, naming what the claim found', async () => {
    const r = await rig({ status: 'failed', reason: 'provider down for 60 min' });
    const claim = r.store.claim.bind(r.store);
    r.store.claim = async (...args) => {
      const outcome = await claim(...args);
      if (outcome.kind !== 'reclaimed') throw new Error(outcome.kind);
      await r.store.complete(outcome.claim, { status: 'succeeded', chargeId: 'ch_other', amount: 1250, currency: 'EUR' });
      return claim(...args);
    };
    const error = await refusal(retryFailedPayment(r.deps, payment.paymentId));
    expect(error).toBeInstanceOf(PaymentRetryRefusedError);
    expect(error.message).toBe(`payment ${payment.paymentId} is duplicate: not retried`);
    expect(r.started).toEqual([]);
  });

  test('the record swept between the read and the claim (a fresh claim): the run is started on it, not refused', async () => {
    const r = await rig({ status: 'failed', reason: 'provider down for 60 min' });
    const swept = new InMemoryIdempotencyStore({ clock: { nowMs: () => r.time.now }, leaseMs: 30_000 });
    r.store.claim = (...args) => swept.claim(...args);
    expect(await retryFailedPayment(r.deps, payment.paymentId)).toMatchObject({ attempt: 1, started: 'started' });
    expect(r.started).toHaveLength(1);
  });

  test('the record swept between the read and the claim: the key was used before (its first call uncertain), though the claim reads attempt 1', async () => {
    const r = await rig({ status: 'failed', reason: 'provider down for 60 min' });
    r.time.now += 3 * 86_400_000; // past the provider's key memory: a plain charge under the key could charge again
    const swept = new InMemoryIdempotencyStore({ clock: { nowMs: () => r.time.now }, leaseMs: 30_000 });
    r.store.claim = (...args) => swept.claim(...args);
    await retryFailedPayment(r.deps, payment.paymentId);
    expect(r.started[0].input).toMatchObject({ attempt: 1, keyUsedBefore: true });
    // Checked at the provider by the operator: the key is fresh on purpose.
    const checked = await rig({ status: 'failed', reason: 'held' });
    const sweptToo = new InMemoryIdempotencyStore({ clock: { nowMs: () => checked.time.now }, leaseMs: 30_000 });
    checked.store.claim = (...args) => sweptToo.claim(...args);
    await retryFailedPayment({ ...checked.deps, checkedAtProvider: true }, payment.paymentId);
    expect(checked.started[0].input.keyUsedBefore).toBeUndefined();
  });

  test('a record reopened by someone else meanwhile: refused, asking to run the command again', async () => {
    const r = await rig({ status: 'failed', reason: 'x' });
    r.store.reopen = async () => ({ kind: 'changed' }) as never;
    await expect(retryFailedPayment(r.deps, payment.paymentId)).rejects.toThrow(`payment ${payment.paymentId} changed meanwhile; run the command again`);
    expect(r.started).toEqual([]);
  });

  test('a record in progress under a live lease is refused (not retried); past its lease it is taken over, named by its state', async () => {
    const r = await rig();
    await expect(retryFailedPayment(r.deps, payment.paymentId)).rejects.toThrow(
      `payment ${payment.paymentId} is in progress (its lease has not lapsed): not retried`,
    );
    r.time.now += 60_000;
    await expect(retryFailedPayment(r.deps, payment.paymentId)).resolves.toMatchObject({ attempt: 2, previous: 'IN_PROGRESS (attempt 1)' });
  });

  test('the reconciler’s takeover: only the record as listed; one that changed (status or ETag) is refused naming its state', async () => {
    const r = await rig();
    r.time.now += 60_000;
    const listed = (await r.store.get(key))!;
    await expect(retryFailedPayment({ ...r.deps, listed: { ...listed, etag: 'older' } }, payment.paymentId)).rejects.toThrow(
      `payment ${payment.paymentId} changed since it was listed in progress (now IN_PROGRESS, attempt 1): left alone`,
    );
    const done = await rig({ status: 'failed', reason: 'x' });
    const completed = (await done.store.get(key))!;
    await expect(retryFailedPayment({ ...done.deps, listed: completed }, payment.paymentId)).rejects.toThrow('(now COMPLETED, attempt 1): left alone');
    expect(done.started).toEqual([]);
    await expect(retryFailedPayment({ ...r.deps, listed, origin: 'reconciler' }, payment.paymentId)).resolves.toMatchObject({ attempt: 2 });
    expect(r.started[0].input.correlationId).toBe(`reconciler-${payment.paymentId}`);
  });
});
