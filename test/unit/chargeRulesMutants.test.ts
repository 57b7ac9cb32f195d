/**
 * The charge's pure rules, edge by edge: the mutants Stryker's jest runner left alive in the entity
 * (src/payments/chargeEntity.ts), the orchestration (chargeOrchestration.ts), the patience check (chargePatience.ts)
 * and the provider-call plan and its key-memory guard (providerLookup.ts); docs/mutation.md.
 */
import { applyChargeOperation } from '../../src/payments/chargeEntity';
import { chargeOrchestration, handOffOrchestration, StaleAttemptError, type ChargeSteps } from '../../src/payments/chargeOrchestration';
import { assertPatienceCoversCharge } from '../../src/payments/chargePatience';
import { keyMemoryGuardOf, planProviderCall, type ProviderCapability } from '../../src/payments/providerLookup';
import { chargeStepsSetup, type Task } from '../support/chargeSteps';

const HOUR_MS = 3_600_000;
const byKey: ProviderCapability = { lookup: 'by-key', keyMemoryHours: 24 };
const none: ProviderCapability = { lookup: 'none', keyMemoryHours: 24 };

describe('the charge entity', () => {
  test("a begin under the same run key but a later attempt is a new begin, not the same run's begin again", () => {
    const first = applyChargeOperation(undefined, { name: 'begin', attempt: 1, runKey: 'o1#1' }, 10).state;
    const later = applyChargeOperation(first, { name: 'begin', attempt: 2, runKey: 'o1#1' }, 20);
    expect(later.state).toEqual({ status: 'inProgress', attempt: 2, startedAtMs: 20, runKey: 'o1#1', uncertain: true });
    expect(later.reply).toEqual({ decision: 'proceed', uncertain: true });
  });

  test("a fail's reason is kept to 500 characters", () => {
    const begun = applyChargeOperation(undefined, { name: 'begin', attempt: 1 }, 10).state;
    const failed = applyChargeOperation(begun, { name: 'fail', attempt: 1, reason: 'r'.repeat(800) }, 20).state;
    expect(failed).toEqual({ status: 'failed', attempt: 1, reason: 'r'.repeat(500), failedAtMs: 20 });
  });
});

describe('the charge orchestration', () => {
  const { steps, input, handoffInput } = chargeStepsSetup();

  test('StaleAttemptError names both attempts and is not retryable (the newer delivery finishes the charge)', () => {
    const error = new StaleAttemptError(2, 3);
    expect(error.message).toBe('charge attempt 2 is stale: attempt 3 is on record');
    expect(error.retryable).toBe(false);
  });

  test('holding design without timer steps: the failed call is recorded as fail with why, and thrown with its cause', () => {
    const noTimer: ChargeSteps<Task> = { callEntity: steps.callEntity, chargeProvider: steps.chargeProvider };
    const run = chargeOrchestration(input, noTimer);
    run.next();
    run.next({ decision: 'proceed' });
    const cause = new Error('provider 503');
    const failing = run.throw(cause).value as Task;
    const why = 'the charge needs the timer and nowMs steps to retry the provider';
    expect(failing).toEqual({ call: 'entity:fail', arg: { name: 'fail', attempt: 3, reason: why } });
    let thrown: unknown;
    try {
      run.next({ decision: 'recorded' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toEqual(new Error(why));
    expect((thrown as Error).cause).toBe(cause);
  });

  test('handoff without its steps: refused with what is missing', () => {
    const run = handOffOrchestration(handoffInput({ budgetMs: 1, firstDelayMs: 1, maxDelayMs: 1 }), { budgetMs: 1 } as never, {
      callEntity: steps.callEntity,
      chargeProvider: steps.chargeProvider,
    });
    expect(() => run.next()).toThrow('the handoff charge needs the completeRecord, timer and nowMs steps');
  });

  test('a version 1 run (no version in its plan) begins without a run key, as its history has it', () => {
    const run = chargeOrchestration(handoffInput({ budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 5_000 }), steps);
    expect(run.next().value).toEqual({ call: 'entity:begin', arg: { name: 'begin', attempt: 3 } });
  });
});

describe('the patience check', () => {
  test('the refusal spells out the arithmetic in seconds', () => {
    const settings = { IDEMPOTENCY_LEASE_SECONDS: 60, SERVICEBUS_MAX_DELIVERY_COUNT: 5, PAYMENT_PROVIDER_TIMEOUT_MS: 10_000 };
    expect(() => assertPatienceCoversCharge(settings)).toThrow(
      'SERVICEBUS_MAX_DELIVERY_COUNT (5) x 0.8 x IDEMPOTENCY_LEASE_SECONDS (60 s) = 240 s of deliveries is less than 2 x the slowest charge ' +
        '(240 s: cold start 10 s + host crash 60 s + 9 queue hops x 10 s + 5 provider calls x PAYMENT_PROVIDER_TIMEOUT_MS (10000 ms) + retry delays 30 s): ' +
        'charged payments would reach the dead-letter queue. Raise the delivery count or the lease, or lower the timeout',
    );
  });
});

describe('the provider-call plan', () => {
  test('no key memory: even a key of age 0 is looked up first (nothing is trusted)', () => {
    expect(planProviderCall({ lookup: 'by-key', keyMemoryHours: 0 }, { round: 0, entityUncertain: false, keyAgeMs: 0 })).toEqual({ action: 'lookUpFirst' });
  });

  test('a hold whose key age is unknown says so', () => {
    const plan = planProviderCall(none, { round: 1, entityUncertain: false });
    expect(plan.action === 'hold' && plan.reason).toMatch(/^an earlier call may have charged and cannot be checked: the key is an unknown time old, past/);
  });
});

describe('the key-memory guard', () => {
  const now = 50 * HOUR_MS;
  const charge = { action: 'charge' } as const;

  test('a repeat planned on the key memory: trusted until the key is 90 % of it old, then look up (by-key) or hold (none)', () => {
    const c = { round: 1, entityUncertain: false, keyAgeMs: HOUR_MS };
    expect(keyMemoryGuardOf(byKey, c, charge, now)).toEqual({ trustedUntilMs: now - HOUR_MS + 0.9 * 24 * HOUR_MS, otherwise: { lookUpFirst: true } });
    expect(keyMemoryGuardOf(none, c, charge, now)).toEqual({
      trustedUntilMs: now - HOUR_MS + 0.9 * 24 * HOUR_MS,
      otherwise: { hold: expect.stringMatching(/the key is an unknown time old/) },
    });
    expect(keyMemoryGuardOf(byKey, { ...c, round: 0, entityUncertain: true }, charge, now)).toBeDefined();
  });

  test('a first call after a clean begin needs no guard; nor does a plan that does not charge', () => {
    expect(keyMemoryGuardOf(byKey, { round: 0, entityUncertain: false, keyAgeMs: HOUR_MS }, charge, now)).toBeUndefined();
    expect(keyMemoryGuardOf(byKey, { round: 1, entityUncertain: false, keyAgeMs: 23 * HOUR_MS }, { action: 'lookUpFirst' }, now)).toBeUndefined();
  });

  test('no key memory at all: every charge is a possible repeat, guarded from now', () => {
    const guard = keyMemoryGuardOf({ lookup: 'by-key', keyMemoryHours: 0 }, { round: 0, entityUncertain: false, keyAgeMs: 0 }, charge, now);
    expect(guard).toEqual({ trustedUntilMs: now, otherwise: { lookUpFirst: true } });
  });
});
