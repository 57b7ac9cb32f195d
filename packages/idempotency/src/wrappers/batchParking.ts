import { IdempotencyError } from '../protocol/errors';
import type { IdempotencyStore } from '../protocol/IdempotencyStore';
import type { IdempotencyKey } from '../protocol/keys';
import { describeError } from './makeIdempotent';

/**
 * What an event's idempotency record holds when its `park` kept failing (`parkAttempts` times, not a store outage):
 * the last resort, so the batch goes on and a replay skips it. The event itself is in the hub until its retention;
 * the record names why it was set aside and what parking answered.
 */
export interface ParkFailedResult {
  readonly parked: false;
  readonly parkFailed: true;
  readonly reason: string;
  readonly detail: string;
  readonly parkError: string;
}

/** How a park ended: done, or failed every try with this error (an outage, `retryable`, is thrown instead). */
export type ParkTry = { readonly ok: true } | { readonly ok: false; readonly error: unknown; readonly tries: number };

/**
 * Runs `park` up to `attempts` times, `delayMs` apart. A retryable failure (`IdempotencyError` with `retryable`, e.g.
 * `StoreUnavailableError`: an outage heals) is thrown at once: the batch is retried. Anything else that fails every try
 * is answered, for the caller's last resort.
 */
export async function tryPark(park: () => Promise<void>, attempts: number, delayMs: number): Promise<ParkTry> {
  let error: unknown;
  for (let tries = 1; tries <= attempts; tries++) {
    try {
      await park();
      return { ok: true };
    } catch (failure) {
      if (failure instanceof IdempotencyError && failure.retryable) throw failure;
      error = failure;
      if (tries < attempts && delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
  return { ok: false, error, tries: attempts };
}

/** The last-resort result and the outcome detail for an event whose park failed. */
export function parkFailed(reason: string, detail: string, failed: Extract<ParkTry, { ok: false }>): { result: ParkFailedResult; detail: string } {
  const parkError = describeError(failed.error);
  return {
    result: { parked: false, parkFailed: true, reason, detail: detail.slice(0, 2000), parkError: parkError.slice(0, 2000) },
    detail: `${detail}; park failed ${failed.tries} times (last: ${parkError}): kept in the idempotency record instead`,
  };
}

/**
 * Records the last resort of an event without a record of its own (its key is on record for another payload, or it
 * has no key): under `['park-failed', <its key or 'unkeyed'>, <digest>]`, so a replay finds it.
 * @returns false when it cannot be recorded (no consumer to scope it, no digest): the caller throws then.
 */
export async function recordParkFailed(
  store: IdempotencyStore,
  consumer: string | undefined,
  key: IdempotencyKey | undefined,
  digest: string,
  result: ParkFailedResult,
  leaseMs: number,
): Promise<boolean> {
  const scope = key?.consumer ?? consumer;
  if (scope === undefined || digest === '') return false;
  const lastResort = { consumer: scope, key: JSON.stringify(['park-failed', key?.key ?? 'unkeyed', digest]) };
  const outcome = await store.claim(lastResort, digest, { leaseMs });
  if (outcome.kind === 'claimed' || outcome.kind === 'reclaimed') await store.complete(outcome.claim, result);
  return true;
}
