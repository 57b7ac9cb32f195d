import { IdempotencyError, KeyInProgressError, KeyReusedError, LeaseLostError } from './errors';
import type { Claim, ClaimOutcome, IdempotencyStore } from './IdempotencyStore';
import { scopedKeyString, type IdempotencyKey } from './keys';
import { payloadDigest } from './digest';

/** One decision of the wrapper. `releaseFailed`: a claim could not be given up; `reason` says why (it stays in progress until its lease lapses). */
export interface IdempotencyEvent {
  readonly key: IdempotencyKey;
  readonly outcome: ClaimOutcome['kind'] | 'completed' | 'released' | 'releaseFailed';
  readonly attempt?: number;
  readonly reason?: string;
}

/** Told of every decision the wrapper makes; telemetry plugs in here. An observer that throws is ignored: it never changes an outcome. */
export interface IdempotencyObserver {
  (event: IdempotencyEvent): void;
}

export interface MakeIdempotentOptions<I> {
  readonly store: IdempotencyStore;
  /** The key of one input, scoped by consumer (see `keys.ts`). @throws InvalidKeyError */
  readonly keyOf: (input: I) => IdempotencyKey;
  /** The part of the input whose digest detects key reuse. Default: the whole input. */
  readonly payloadOf?: (input: I) => unknown;
  readonly observer?: IdempotencyObserver;
}

/**
 * Wraps `work` so it runs at most once per key: claim, run, complete; on a duplicate the stored
 * result is returned without running. Every failure after the claim (the work's, or a completion
 * that fails, e.g. `ResultTooLargeError`) releases the claim with the error as its reason and
 * rethrows; when the release fails too, the observer is told why (`releaseFailed`) and the key
 * stays in progress until its lease lapses. A completion refused with `LeaseLostError` releases
 * nothing (the claim belongs to someone else).
 *
 * If the process dies after `work` ran but before completion, the record stays in progress until
 * its lease lapses, and the next delivery runs `work` again with `claim.attempt + 1`: pass
 * `claim.key` downstream (an `Idempotency-Key` header) so that effects outside the store dedupe too.
 *
 * @throws KeyInProgressError (retryable) when another claimant holds the lease;
 *         KeyReusedError when the key was used for another payload;
 *         LeaseLostError when the claim was taken over before completion;
 *         the error of `work` (after releasing the claim); store errors (StoreUnavailableError is retryable).
 *
 * @example
 * const charge = makeIdempotent((req: ChargeRequest, claim) => provider.charge(req, claim.key.key), {
 *   store, keyOf: (req) => keyFromBusinessKey('payments', req, (r) => r.paymentId),
 * });
 */
export function makeIdempotent<I, R>(work: (input: I, claim: Claim) => Promise<R>, options: MakeIdempotentOptions<I>): (input: I) => Promise<R> {
  const { store, keyOf } = options;
  const observe = safeObserver(options.observer);
  const payloadOf = options.payloadOf ?? ((input: I) => input);
  return async (input: I): Promise<R> => {
    const key = keyOf(input);
    const digest = payloadDigest(payloadOf(input));
    const outcome = await store.claim(key, digest);
    observe({ key, outcome: outcome.kind, attempt: 'claim' in outcome ? outcome.claim.attempt : outcome.record.attempt });
    switch (outcome.kind) {
      case 'duplicate':
        return outcome.record.result as R;
      case 'inProgress':
        throw new KeyInProgressError(scopedKeyString(key), outcome.record.leaseExpiresAtMs, outcome.record.attempt);
      case 'keyReused':
        throw new KeyReusedError(scopedKeyString(key), outcome.record.digest, digest);
      case 'claimed':
      case 'reclaimed':
        break;
    }
    const claim = outcome.claim;
    // The caller needs the failure's error, not the release's: a failed release is reported to the observer.
    const releaseAfter = (error: unknown): Promise<void> =>
      store.release(claim, describe(error)).then(
        () => observe({ key, outcome: 'released', attempt: claim.attempt }),
        (releaseError: unknown) => observe({ key, outcome: 'releaseFailed', attempt: claim.attempt, reason: describe(releaseError) }),
      );
    let result: R;
    try {
      result = await work(input, claim);
    } catch (error) {
      await releaseAfter(error);
      throw error;
    }
    try {
      await store.complete(claim, result);
    } catch (error) {
      if (!(error instanceof LeaseLostError)) await releaseAfter(error);
      throw error;
    }
    observe({ key, outcome: 'completed', attempt: claim.attempt });
    return result;
  };
}

/** The observer, made unable to throw into the workflow (telemetry must never lock a key). */
function safeObserver(observer: IdempotencyObserver | undefined): IdempotencyObserver {
  return (event) => {
    try {
      observer?.(event);
    } catch {
      // ignored on purpose: see IdempotencyObserver
    }
  };
}

/** A short reason for a release: the error's class and message, never a payload. */
function describe(error: unknown): string {
  if (error instanceof LeaseLostError || error instanceof IdempotencyError) return `${error.name}: ${error.message}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return `non-error thrown: ${typeof error}`;
}
