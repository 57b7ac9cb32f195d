import type { ChargeActivityInput } from './chargeInputs';
import { ChargeInFlightError, LookupUnsupportedError, ProviderRefusedError, type PaymentProviderClient } from './PaymentProviderClient';
import { HELD_FOR_OPERATOR } from './providerLookup';
import type { ChargeResult } from './schema';

/** One provider call of the `chargeProvider` activity, as its input asks: hold, look up, charge (src/app/durableCharge.ts runs it). */

/** Where the activity reports a held payment and a look-up the provider does not offer. */
export interface HeldReporter {
  held(input: ChargeActivityInput, reason: string): void;
  lookupUnsupported(input: ChargeActivityInput, statusCode: number): void;
}

/**
 * The activity's body (the local executor calls it too): hold when asked, look up when asked, else (or when nothing
 * is found) charge. A charge found under the key for another amount or currency is another payment's (the key
 * reused after its record expired): answered as the provider answers a key reused with another body (422,
 * `rejected`), never returned as this payment's charge, and never charged again. A look-up the provider does not
 * offer holds the payment (never a transient retry, never a blind charge).
 */
export async function chargeOnce(
  provider: Pick<PaymentProviderClient, 'charge' | 'findCharge'>,
  planned: ChargeActivityInput,
  report?: HeldReporter,
  nowMs: () => number = Date.now,
): Promise<ChargeResult> {
  const input = atTheCall(planned, nowMs());
  const { payment, idempotencyKey, correlationId, lookUpFirst } = input;
  const hold = (reason: string): ChargeResult => {
    report?.held(input, reason);
    return { status: 'failed', reason: `held for an operator: ${reason}`.slice(0, 500), code: HELD_FOR_OPERATOR };
  };
  if (input.hold) return hold(input.hold);
  if (input.lookUpOnly) return lookUpOnly(provider, input, input.lookUpOnly.failedReason, hold, report);
  if (lookUpFirst) {
    let found: ChargeResult | undefined;
    try {
      found = await provider.findCharge(idempotencyKey, correlationId, input.chargesFromMs);
    } catch (error) {
      if (!(error instanceof LookupUnsupportedError)) throw error;
      report?.lookupUnsupported(input, error.statusCode);
      return hold(`an earlier call may have charged and the look-up is not offered (${error.message})`);
    }
    if (found?.status === 'succeeded') {
      if (found.amount === payment.amount && found.currency === payment.currency) return found;
      return { status: 'rejected', reason: 'idempotency key used before with a different body (found by look-up)', code: 'idempotency-key-reused' };
    }
  }
  const result = await provider.charge(payment, idempotencyKey, correlationId, input.chargesFromMs);
  // After a call that may have charged, only the provider's idempotency answer (a key reused) is its word about the key:
  // a validation 400 runs before it (Stripe: "most 400s") and says nothing of the earlier charge.
  if (input.mayRepeat && result.status === 'rejected' && result.code !== 'idempotency-key-reused')
    throw new ProviderRefusedError(400, `a rejection after a call that may have charged (${result.reason.slice(0, 120)})`);
  return result;
}

/**
 * The last call of a run whose budget is spent while a call may have charged: the charge made under the key, if the
 * provider has one for this payment's amount and currency; none: `failed` with the run's reason (nothing was charged);
 * a look-up that fails or is not offered: held for an operator (only the provider can say).
 */
async function lookUpOnly(
  provider: Pick<PaymentProviderClient, 'findCharge'>,
  input: ChargeActivityInput,
  failedReason: string,
  hold: (reason: string) => ChargeResult,
  report?: HeldReporter,
): Promise<ChargeResult> {
  let found: ChargeResult | undefined;
  try {
    found = await provider.findCharge(input.idempotencyKey, input.correlationId, input.chargesFromMs);
  } catch (error) {
    // A charge listed as not final yet is a call in flight: the settle looks again after a call's lease, never "none".
    if (error instanceof ChargeInFlightError) throw error;
    if (error instanceof LookupUnsupportedError) report?.lookupUnsupported(input, error.statusCode);
    const why = error instanceof Error ? error.message : String(error);
    return hold(`the retry budget is spent, an earlier call may have charged and the look-up failed (${why.slice(0, 150)}): check the key at the provider`);
  }
  if (found?.status !== 'succeeded') return { status: 'failed', reason: `${failedReason}; no charge under the key (looked up)`.slice(0, 500) };
  if (found.amount === input.payment.amount && found.currency === input.payment.currency) return found;
  return { status: 'rejected', reason: 'idempotency key used before with a different body (found by look-up)', code: 'idempotency-key-reused' };
}

/**
 * The plan as it stands at the call: one that relied on the provider's key memory and reaches the provider past the
 * trusted share of it (queue waits, a worker crash after the plan) looks up first or holds instead.
 */
export function atTheCall(input: ChargeActivityInput, nowMs: number): ChargeActivityInput {
  const guard = input.keyMemory;
  if (!guard || input.hold || input.lookUpFirst || nowMs <= guard.trustedUntilMs) return input;
  const lateMin = Math.round((nowMs - guard.trustedUntilMs) / 60_000);
  if ('lookUpFirst' in guard.otherwise) return { ...input, lookUpFirst: true };
  return { ...input, hold: `${guard.otherwise.hold} (decided at the call, ${lateMin} min past the trusted key memory: queue waits after the plan)` };
}
