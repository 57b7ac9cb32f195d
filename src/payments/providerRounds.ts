import type { ChargeActivityInput, ChargeOrchestrationInput } from './chargeInputs';
import type { RecordedCharge } from './completeRecord';
import { CALL_LEASE_MS } from './callFence';
import { HANDOFF_VERSION } from './handOffPlan';
import { HELD_FOR_OPERATOR, keyMemoryGuardOf, planProviderCall } from './providerLookup';
import { retryDelayMs, type RetryBudget } from './recordWriteRetry';

/** How far the provider's clock may run behind ours when it stamps a charge's creation (a charge of this generation). */
export const PROVIDER_CLOCK_SKEW_MS = 10 * 60_000;

/** A run's provider rounds: what each call is asked to do, and the loop within the retry budget (both designs' handoff). */

/** The provider activity's input for retry round `round` of a run, `elapsedMs` into it: per {@link planProviderCall}. */
export function providerCall(input: ChargeOrchestrationInput, round: number, entityUncertain: boolean, elapsedMs: number, nowMs?: number): ChargeActivityInput {
  // The larger of two lower bounds: from the origin (every wait before and inside the run counted: issue 51 item 3), and
  // the starter's age plus the loop's time (runs started before `keyOriginMs`; and where the starter's clock runs ahead
  // of the engine's, as in the demo's time jumps, the engine's `currentUtcDateTime` alone would read the key young).
  const fromStart = input.keyAgeAtStartMs === undefined ? undefined : input.keyAgeAtStartMs + elapsedMs;
  const fromOrigin = input.keyOriginMs === undefined || nowMs === undefined ? undefined : Math.max(0, nowMs - input.keyOriginMs);
  // A generation that began after an earlier one used the key (`keyUsedBefore`): its age is unknown, its first call uncertain.
  const keyAgeMs = input.keyUsedBefore ? undefined : fromOrigin === undefined ? fromStart : Math.max(fromOrigin, fromStart ?? 0);
  const capability = input.provider ?? input.providerLookup ?? 'uncertain';
  const lookupCase = { round, entityUncertain: entityUncertain || input.keyUsedBefore === true, keyAgeMs };
  const plan = planProviderCall(capability, lookupCase);
  // Runs started before the guard existed replay without it (their history's inputs stay as they were).
  const at = nowMs === undefined || input.handoff?.version !== HANDOFF_VERSION ? undefined : nowMs;
  const keyMemory = at === undefined ? undefined : keyMemoryGuardOf(capability, lookupCase, plan, at);
  const mayRepeat = at !== undefined && (round > 0 || lookupCase.entityUncertain);
  // The provider's memory does not replay an earlier call (it keeps only successes, or nothing): a look-up must see them.
  const memoryBlind = typeof capability !== 'string' && (capability.keyMemoryHours === 0 || capability.memoryKeepsOnlySuccesses === true);
  const ifRepeat = at === undefined || mayRepeat ? undefined : repeatPlanOf(providerCall(input, 1, entityUncertain, elapsedMs, nowMs));
  return {
    idempotencyKey: input.idempotencyKey,
    payment: input.payment,
    correlationId: input.correlationId,
    ...(plan.action === 'lookUpFirst' ? { lookUpFirst: true } : {}),
    ...(plan.action === 'hold' ? { hold: plan.reason } : {}),
    ...(keyMemory ? { keyMemory } : {}),
    ...(at !== undefined && input.keyOriginMs !== undefined ? { chargesFromMs: input.keyOriginMs - PROVIDER_CLOCK_SKEW_MS } : {}),
    ...(mayRepeat ? { mayRepeat: true as const } : {}),
    ...(at !== undefined && memoryBlind && plan.action === 'lookUpFirst' ? { lookUpSeesEarlierCalls: true as const } : {}),
    ...(ifRepeat ? { ifRepeat } : {}),
  };
}

/** What a retry round's input asks of its call, for a first call that turns out to be a repeat (`ifRepeat`). */
function repeatPlanOf(retry: ChargeActivityInput): NonNullable<ChargeActivityInput['ifRepeat']> {
  const { lookUpFirst, hold, keyMemory, mayRepeat, lookUpSeesEarlierCalls } = retry;
  return {
    ...(lookUpFirst ? { lookUpFirst } : {}),
    ...(hold ? { hold } : {}),
    ...(keyMemory ? { keyMemory } : {}),
    ...(mayRepeat ? { mayRepeat } : {}),
    ...(lookUpSeesEarlierCalls ? { lookUpSeesEarlierCalls } : {}),
  };
}

/**
 * Provider calls until one answers, or until the next retry would start past the budget. Then, when the plan settles
 * (`settleUncertain`), one last call says what happened, since no run can tell that none of its calls charged (an
 * activity execution whose answer and worker were both lost leaves the run nothing to go by: simulator seed 634): the
 * charge looked up (found: its result; none: `failed`, now a fact), or, with no look-up, the payment held for an
 * operator to check at the provider. Never `failed` for a customer the provider charged. Plans without it (runs
 * started before): `failed`. With `settleTries` (plans since issue 51), the settle waits out a call's lease too
 * (`CALL_LEASE_MS`: the look-up must see every announced call) and a settle that cannot be made yet (a call announced
 * since, the store down) is tried again after a call's lease, that many times in all, before the payment is held.
 */
export function* chargeWithinBudget<Task>(
  input: ChargeOrchestrationInput,
  retry: RetryBudget,
  call: (activityInput: ChargeActivityInput) => Task,
  read: (answer: unknown) => RecordedCharge,
  nowMs: () => number,
  timer: (atMs: number) => Task,
  entityUncertain: boolean,
  settleUncertain = false,
  settleTries = 1,
): Generator<Task, RecordedCharge, unknown> {
  const startedMs = nowMs();
  const callLeaseMs = retry.callLeaseMs ?? CALL_LEASE_MS;
  const planned = (round: number, uncertain: boolean): ChargeActivityInput => {
    const activityInput = providerCall(input, round, uncertain, nowMs() - startedMs, nowMs());
    const withLease = retry.callLeaseMs === undefined ? activityInput : { ...activityInput, callLeaseMs };
    return retry.postWindowMs === undefined ? withLease : { ...withLease, postWindowMs: retry.postWindowMs };
  };
  for (let round = 0; ; round++) {
    try {
      return read(yield call(planned(round, entityUncertain)));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      const next = nowMs() + retryDelayMs(retry, round);
      if (next - startedMs > retry.budgetMs) {
        const minutes = Math.round((retry.budgetMs / 60_000) * 100) / 100;
        const reason = `provider failed transiently for the whole retry budget (${minutes} min, ${round + 1} rounds): ${why}`.slice(0, 500);
        if (!settleUncertain) return { result: { status: 'failed', reason }, record: 'unwritten' };
        // The longest retry interval first: a charge made by the last call shows in a look-up that lags (a search index:
        // Stripe's, up to a minute), and a call still in flight at the provider has finished.
        // A look-up also waits out the lease of the calls announced on the record (since `settleTries`): it must see them.
        const waitOutCalls = settleTries > 1 && lookupOffered(input) ? callLeaseMs : 0;
        yield timer(nowMs() + Math.max(retry.maxDelayMs, waitOutCalls, next - nowMs()));
        for (let settleTry = 1; ; settleTry++) {
          try {
            return read(yield call(settlingCall(input, planned(round + 1, true), reason)));
          } catch (settleError) {
            if (settleTry >= settleTries) return heldAfterSettle(settleError);
            yield timer(nowMs() + callLeaseMs);
          }
        }
      }
      yield timer(next);
    }
  }
}

/**
 * The settle could not be made (a call still announced, the store down, the worker failed): held, and the record write
 * that follows alerts it; never an exception out of the run (the reconciler would restart it).
 */
function heldAfterSettle(settleError: unknown): RecordedCharge {
  const cause = settleError instanceof Error ? settleError.message : String(settleError);
  const held = `held for an operator: the retry budget is spent and the last check could not be made (${cause.slice(0, 150)}): check the key at the provider`;
  return { result: { status: 'failed', reason: held.slice(0, 500), code: HELD_FOR_OPERATOR }, record: 'unwritten' };
}

/** The last call of a run whose budget is spent: look up only, or hold (see above). */
function settlingCall(input: ChargeOrchestrationInput, planned: ChargeActivityInput, failedReason: string): ChargeActivityInput {
  const { keyMemory: _guard, lookUpFirst: _lookUp, hold: _hold, lookUpSeesEarlierCalls: _sees, ifRepeat: _ifRepeat, ...call } = planned;
  if (lookupOffered(input)) return { ...call, lookUpOnly: { failedReason } };
  return {
    ...call,
    hold: `the retry budget is spent and no call can be shown not to have charged (${failedReason.slice(0, 200)}); PAYMENT_PROVIDER_LOOKUP is none, so only the provider can say: check the key there`,
  };
}

/** The run's provider offers a look-up by key (the settle looks up, else it holds). */
function lookupOffered(input: ChargeOrchestrationInput): boolean {
  const capability = input.provider ?? input.providerLookup ?? 'uncertain';
  return typeof capability === 'string' ? capability !== 'off' : capability.lookup === 'by-key';
}
