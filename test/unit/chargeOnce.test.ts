import { atTheCall, chargeOnce, type HeldReporter } from '../../src/payments/chargeOnce';
import type { ChargeActivityInput } from '../../src/payments/chargeInputs';
import { LookupUnsupportedError, ProviderRefusedError } from '../../src/payments/PaymentProviderClient';
import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';

/**
 * The `chargeProvider` activity's body (src/payments/chargeOnce.ts) as the provider and an operator see it: the key and
 * correlation id each call carries, what a hold and a look-up answer, what is reported, and the plan's re-decision at
 * the call (`atTheCall`). In memory: a recording provider stands in for the HTTP client.
 */
const payment: PaymentRequested = { paymentId: 'pay-7', customerId: 'cust-7', amount: 1250, currency: 'EUR' };
const mine: ChargeResult = { status: 'succeeded', chargeId: 'ch_found', amount: 1250, currency: 'EUR' };

type Call = { op: 'charge'; payment: PaymentRequested; key: string; correlationId?: string } | { op: 'find'; key: string; correlationId?: string };

function recordingProvider(find: () => Promise<ChargeResult | undefined> = async () => undefined) {
  const calls: Call[] = [];
  return {
    calls,
    provider: {
      findCharge: async (key: string, correlationId?: string) => {
        calls.push({ op: 'find', key, correlationId });
        return find();
      },
      charge: async (p: PaymentRequested, key: string, correlationId?: string): Promise<ChargeResult> => {
        calls.push({ op: 'charge', payment: p, key, correlationId });
        return { status: 'succeeded', chargeId: `ch_${calls.length}`, amount: p.amount, currency: p.currency };
      },
    },
  };
}

function recordingReporter() {
  const held: Array<{ input: ChargeActivityInput; reason: string }> = [];
  const unsupported: Array<{ input: ChargeActivityInput; statusCode: number }> = [];
  const report: HeldReporter = {
    held: (input, reason) => void held.push({ input, reason }),
    lookupUnsupported: (input, statusCode) => void unsupported.push({ input, statusCode }),
  };
  return { report, held, unsupported };
}

const base: ChargeActivityInput = { idempotencyKey: 'pay-7', payment, correlationId: 'corr-7' };
const NOW = Date.UTC(2026, 0, 1);
const clock = () => NOW;

describe('chargeOnce: the Idempotency-Key and correlation id on every call', () => {
  test('the charge carries the payment, its key and the correlation id; a second call for the same payment sends the same key (never a new one)', async () => {
    const p = recordingProvider();
    await chargeOnce(p.provider, base, undefined, clock);
    await chargeOnce(p.provider, base, undefined, clock);
    expect(p.calls).toEqual([
      { op: 'charge', payment, key: 'pay-7', correlationId: 'corr-7' },
      { op: 'charge', payment, key: 'pay-7', correlationId: 'corr-7' },
    ]);
  });

  test('the look-up first and the charge after it use the same key and correlation id', async () => {
    const p = recordingProvider();
    expect(await chargeOnce(p.provider, { ...base, lookUpFirst: true }, undefined, clock)).toMatchObject({ status: 'succeeded', chargeId: 'ch_2' });
    expect(p.calls).toEqual([
      { op: 'find', key: 'pay-7', correlationId: 'corr-7' },
      { op: 'charge', payment, key: 'pay-7', correlationId: 'corr-7' },
    ]);
  });

  test('a look-up that finds a charge not succeeded (a declined one) charges under the same key', async () => {
    const p = recordingProvider(async () => ({ status: 'declined', reason: 'card declined' }));
    expect(await chargeOnce(p.provider, { ...base, lookUpFirst: true }, undefined, clock)).toMatchObject({ status: 'succeeded' });
    expect(p.calls.map((c) => c.op)).toEqual(['find', 'charge']);
  });

  test('the real clock by default: a plan trusted until far in the future charges', async () => {
    const p = recordingProvider();
    const input = { ...base, keyMemory: { trustedUntilMs: Date.now() + 3_600_000, otherwise: { hold: 'no look-up' } } };
    expect(await chargeOnce(p.provider, input)).toMatchObject({ status: 'succeeded' });
    expect(p.calls.map((c) => c.op)).toEqual(['charge']);
  });
});

describe('chargeOnce: a hold', () => {
  test('calls nothing, answers failed held-for-operator with the reason, and reports the hold with the input and reason', async () => {
    const p = recordingProvider();
    const r = recordingReporter();
    const input = { ...base, hold: 'the key may have charged' };
    expect(await chargeOnce(p.provider, input, r.report, clock)).toEqual({
      status: 'failed',
      reason: 'held for an operator: the key may have charged',
      code: 'held-for-operator',
    });
    expect(p.calls).toEqual([]);
    expect(r.held).toEqual([{ input, reason: 'the key may have charged' }]);
  });

  test("the hold's answer is cut to 500 characters", async () => {
    const result = await chargeOnce(recordingProvider().provider, { ...base, hold: 'x'.repeat(800) }, undefined, clock);
    expect(result).toMatchObject({ status: 'failed', code: 'held-for-operator' });
    expect((result as { reason: string }).reason).toHaveLength(500);
  });
});

describe('chargeOnce: look up first, and the look-up is not offered', () => {
  test('holds with the look-up error, reports the status code, charges nothing', async () => {
    const p = recordingProvider(async () => {
      throw new LookupUnsupportedError(404);
    });
    const r = recordingReporter();
    const input = { ...base, lookUpFirst: true };
    const result = await chargeOnce(p.provider, input, r.report, clock);
    expect(result).toEqual({
      status: 'failed',
      code: 'held-for-operator',
      reason: `held for an operator: an earlier call may have charged and the look-up is not offered (${new LookupUnsupportedError(404).message})`.slice(
        0,
        500,
      ),
    });
    expect(r.unsupported).toEqual([{ input, statusCode: 404 }]);
    expect(r.held).toHaveLength(1);
    expect(p.calls.map((c) => c.op)).toEqual(['find']);
  });

  test('any other look-up failure is thrown as it is (the run retries it): no hold, no charge', async () => {
    const p = recordingProvider(async () => {
      throw new Error('503 to a charge look-up');
    });
    const r = recordingReporter();
    await expect(chargeOnce(p.provider, { ...base, lookUpFirst: true }, r.report, clock)).rejects.toThrow('503 to a charge look-up');
    expect(r.held).toEqual([]);
    expect(r.unsupported).toEqual([]);
    expect(p.calls.map((c) => c.op)).toEqual(['find']);
  });
});

describe('chargeOnce: look up only (the budget is spent)', () => {
  const only = (failedReason = 'retry budget spent after 5 calls'): ChargeActivityInput => ({ ...base, lookUpOnly: { failedReason } });

  test('the charge found under the key for this payment is the answer; the look-up carries the key and correlation id; nothing is charged', async () => {
    const p = recordingProvider(async () => mine);
    expect(await chargeOnce(p.provider, only(), undefined, clock)).toEqual(mine);
    expect(p.calls).toEqual([{ op: 'find', key: 'pay-7', correlationId: 'corr-7' }]);
  });

  test("none found: failed with the run's reason and 'no charge under the key', cut to 500; nothing charged", async () => {
    const p = recordingProvider(async () => undefined);
    expect(await chargeOnce(p.provider, only(), undefined, clock)).toEqual({
      status: 'failed',
      reason: 'retry budget spent after 5 calls; no charge under the key (looked up)',
    });
    const long = await chargeOnce(p.provider, only('r'.repeat(600)), undefined, clock);
    expect(long).toMatchObject({ status: 'failed' });
    expect((long as { reason: string }).reason).toHaveLength(500);
    expect((long as { code?: string }).code).toBeUndefined();
    expect(p.calls.map((c) => c.op)).toEqual(['find', 'find']);
  });

  test('a charge found that is not succeeded counts as none', async () => {
    const p = recordingProvider(async () => ({ status: 'declined', reason: 'card declined' }));
    expect(await chargeOnce(p.provider, only(), undefined, clock)).toEqual({
      status: 'failed',
      reason: 'retry budget spent after 5 calls; no charge under the key (looked up)',
    });
  });

  test('a charge under the key for another amount or currency: rejected as a reused key, never returned', async () => {
    for (const other of [
      { ...mine, amount: 999 },
      { ...mine, currency: 'USD' },
    ]) {
      const p = recordingProvider(async () => other);
      expect(await chargeOnce(p.provider, only(), undefined, clock)).toEqual({
        status: 'rejected',
        reason: 'idempotency key used before with a different body (found by look-up)',
        code: 'idempotency-key-reused',
      });
      expect(p.calls.map((c) => c.op)).toEqual(['find']);
    }
  });

  test('a look-up not offered: held, its status code reported, the cause quoted', async () => {
    const p = recordingProvider(async () => {
      throw new LookupUnsupportedError(405);
    });
    const r = recordingReporter();
    const input = only();
    const result = await chargeOnce(p.provider, input, r.report, clock);
    const why = new LookupUnsupportedError(405).message.slice(0, 150);
    expect(result).toEqual({
      status: 'failed',
      code: 'held-for-operator',
      reason:
        `held for an operator: the retry budget is spent, an earlier call may have charged and the look-up failed (${why}): check the key at the provider`.slice(
          0,
          500,
        ),
    });
    expect(r.unsupported).toEqual([{ input, statusCode: 405 }]);
    expect(r.held).toEqual([{ input, reason: expect.stringContaining('the retry budget is spent') }]);
  });

  test('a look-up that fails otherwise: held (no unsupported report), the cause cut to 150 characters; a thrown string quoted as it is', async () => {
    const p = recordingProvider(async () => {
      throw new Error(`timeout ${'t'.repeat(300)}`);
    });
    const r = recordingReporter();
    const result = (await chargeOnce(p.provider, only(), r.report, clock)) as { reason: string; code?: string };
    expect(result.code).toBe('held-for-operator');
    expect(result.reason).toContain(`(${`timeout ${'t'.repeat(300)}`.slice(0, 150)}): check the key at the provider`);
    expect(r.unsupported).toEqual([]);
    const thrown = recordingProvider(async () => {
      // A thrown value that is not an Error (what the activity must still quote): the point of this case.
      // eslint-disable-next-line @typescript-eslint/only-throw-error
      throw 'socket hang up';
    });
    expect(await chargeOnce(thrown.provider, only(), undefined, clock)).toMatchObject({
      reason: expect.stringContaining('the look-up failed (socket hang up)'),
    });
  });
});

describe('chargeOnce: a rejection after a call that may have charged', () => {
  test("is refused as a 400 before the provider's idempotency (retried), quoting the provider's reason cut to 120 characters", async () => {
    const reason = `payment provider answered 400 (invalid_request_error: ${'x'.repeat(200)})`;
    const rejecting = { charge: async (): Promise<ChargeResult> => ({ status: 'rejected', reason }), findCharge: async () => undefined };
    const error = (await chargeOnce(rejecting, { ...base, mayRepeat: true }, undefined, clock).catch((e: unknown) => e)) as ProviderRefusedError;
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.statusCode).toBe(400);
    expect(error.message).toBe(
      `payment provider answered 400 before its idempotency (a rejection after a call that may have charged (${reason.slice(0, 120)})): not a result for this key`,
    );
  });
});

describe('atTheCall: the plan re-decided at the call', () => {
  const trusted = NOW;
  const lookUp = { ...base, keyMemory: { trustedUntilMs: trusted, otherwise: { lookUpFirst: true as const } } };
  const holdIt = { ...base, keyMemory: { trustedUntilMs: trusted, otherwise: { hold: 'no look-up offered' } } };

  test('without a key-memory guard, or already holding or looking up, the plan is kept as it is', () => {
    expect(atTheCall(base, NOW + 10 * 86_400_000)).toBe(base);
    const holding = { ...holdIt, hold: 'already held' };
    expect(atTheCall(holding, NOW + 3_600_000)).toBe(holding);
    const looking = { ...holdIt, lookUpFirst: true };
    expect(atTheCall(looking, NOW + 3_600_000)).toBe(looking);
  });

  test('up to and at the trusted bound the plan is kept; one millisecond past it, it looks up first', () => {
    expect(atTheCall(lookUp, trusted - 1)).toBe(lookUp);
    expect(atTheCall(lookUp, trusted)).toBe(lookUp);
    expect(atTheCall(lookUp, trusted + 1)).toEqual({ ...lookUp, lookUpFirst: true });
  });

  test('past the bound without a look-up: held, saying how many minutes late (rounded)', () => {
    expect(atTheCall(holdIt, trusted + 1)).toEqual({
      ...holdIt,
      hold: 'no look-up offered (decided at the call, 0 min past the trusted key memory: queue waits after the plan)',
    });
    expect(atTheCall(holdIt, trusted + 150_000).hold).toBe(
      'no look-up offered (decided at the call, 3 min past the trusted key memory: queue waits after the plan)',
    );
    expect(atTheCall(holdIt, trusted + 7 * 60_000 + 20_000).hold).toContain('decided at the call, 7 min past');
  });

  test('chargeOnce decides at its own clock: past the bound it holds (reported) instead of charging', async () => {
    const p = recordingProvider();
    const r = recordingReporter();
    const result = await chargeOnce(p.provider, holdIt, r.report, () => trusted + 120_000);
    expect(result).toEqual({
      status: 'failed',
      code: 'held-for-operator',
      reason: 'held for an operator: no look-up offered (decided at the call, 2 min past the trusted key memory: queue waits after the plan)',
    });
    expect(p.calls).toEqual([]);
    expect(r.held[0].input.hold).toContain('2 min past');
  });
});
