import { AsyncLocalStorage } from 'node:async_hooks';
import { systemClock, type Clock } from '../protocol/clock';
import { ConfigurationError, KeyInProgressError, KeyReusedError, LeaseLostError } from '../protocol/errors';
import type { Claim, IdempotencyStore } from '../protocol/IdempotencyStore';
import { defaultInvocationKey, deliveryCountOf, invocationContextOf } from './invocationKey';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from '../protocol/keys';
import { payloadDigest } from './digest';
import { LeaseHeartbeat } from './LeaseHeartbeat';
import { leaseMsOption } from '../protocol/options';
import type { IdempotencyRecord } from '../protocol/record';

/** One decision of the wrapper. `releaseFailed`: a claim could not be given up; `reason` says why. `leaseLost`: the heartbeat lost the lease. */
export interface IdempotencyEvent {
  readonly key: IdempotencyKey;
  readonly outcome: 'claimed' | 'reclaimed' | 'duplicate' | 'inProgress' | 'keyReused' | 'completed' | 'released' | 'releaseFailed' | 'leaseLost';
  readonly attempt?: number;
  readonly reason?: string;
}

/** Told of every decision the wrapper makes; telemetry plugs in here. An observer that throws is ignored: it never changes an outcome. */
export interface IdempotencyObserver {
  (event: IdempotencyEvent): void;
}

/** What a replayed (duplicate) invocation gets to shape its answer with. */
export interface Replay {
  /** The completed record whose stored result is replayed. */
  readonly record: IdempotencyRecord;
  /** True when it came from the store's in-process cache of completed keys (no round trip). */
  readonly cached: boolean;
}

/** What the wrapped function sees of its claim while it runs: {@link getIdempotencyScope}. */
export interface IdempotencyScope {
  readonly key: IdempotencyKey;
  /** The claim, with its latest ETag and lease end (renewals update it). Pass `claim.attempt` downstream as a fencing number. */
  readonly claim: Claim;
  /** Aborted (reason: `LeaseLostError`) once the lease is lost: stop working; the completion will be refused. */
  readonly signal: AbortSignal;
  /** Renews the lease now, in line with the heartbeat (never breaks the completion). @throws LeaseLostError */
  renewLease(): Promise<Claim>;
}

export interface MakeIdempotentOptions<A extends unknown[], R> {
  readonly store: IdempotencyStore;
  /** Name of the consumer: the scope of its keys (no surrounding spaces). Required unless `keyOf` is given. */
  readonly consumer?: string;
  /**
   * The key of one invocation. Default: from the invocation context's `triggerMetadata` (a CloudEvent's
   * `source` + `id`, else the Service Bus `messageId`), scoped by `consumer`. @throws InvalidKeyError
   */
  readonly keyOf?: (...args: A) => IdempotencyKey;
  /** The part of the arguments whose digest detects key reuse. Default: the first argument (the message). */
  readonly payloadOf?: (...args: A) => unknown;
  /** Shapes a replayed result (e.g. adds a header); called with the stored result, the record and the arguments. */
  readonly responseHook?: (result: R, replay: Replay, ...args: A) => R | Promise<R>;
  /** Lease of a claim. Default: the store's `leaseMs`, else 5 minutes. */
  readonly leaseMs?: number;
  /** Renew the lease every third of it while the function runs. Default true. */
  readonly heartbeat?: boolean;
  /** Read before inserting when the trigger says it is a redelivery (`deliveryCount` > 1). Default true. */
  readonly readFirstOnRedelivery?: boolean;
  /** The store's clock (judges a lapsed lease when renewals fail). Default: the system clock. */
  readonly clock?: Clock;
  readonly observer?: IdempotencyObserver;
}

const scopes = new AsyncLocalStorage<IdempotencyScope>();

/**
 * The claim of the idempotent function running in this async context, or `undefined` outside one.
 * @example
 * const { claim, signal } = getIdempotencyScope()!;
 * await provider.charge(body, { idempotencyKey: claim.key.key, signal });
 */
export function getIdempotencyScope(): IdempotencyScope | undefined {
  return scopes.getStore();
}

/** Runs `work` with `scope` as its {@link getIdempotencyScope} (the batch form runs each event in its own). */
export function runInIdempotencyScope<T>(scope: IdempotencyScope, work: () => T): T {
  return scopes.run(scope, work);
}

/**
 * Wraps a Functions v4 handler, as it is, so its work takes effect once per key: claim, run (with
 * the lease renewed), complete; a duplicate gets the stored result without running. Every argument
 * and `this` are passed through; the handler reads its claim with {@link getIdempotencyScope}.
 *
 * - Key: `keyOf(...args)`, or from `context.triggerMetadata` (see `defaultInvocationKey`).
 * - Redelivery (`deliveryCount` > 1): the store reads before inserting (1 round trip for a duplicate).
 * - Heartbeat: the lease is renewed every third of it; when it is lost the scope's `signal` aborts
 *   and the completion is refused (`LeaseLostError`, nothing is released: the key is someone else's).
 * - Every other failure after the claim (the handler's, a completion that fails) releases the claim
 *   with the error as its reason and rethrows, so the next delivery takes the key over at once.
 *
 * If the process dies after the work but before completion, the next delivery after the lease
 * lapses runs it again with `attempt + 1`: pass the key downstream (`Idempotency-Key`) too.
 *
 * @throws InvalidKeyError at wrap time for a bad `consumer` (e.g. surrounding spaces), per call for a bad key;
 *   KeyInProgressError (retryable); KeyReusedError; LeaseLostError; the handler's error; store errors.
 * @example
 * export const handler = makeIdempotent(async (message: Payment, context: InvocationContext) => charge(message), {
 *   store, consumer: 'payments',
 * });
 */
export function makeIdempotent<A extends unknown[], R, T = unknown>(
  handler: (this: T, ...args: A) => R | Promise<R>,
  options: MakeIdempotentOptions<A, NoInfer<R>>,
): (this: T, ...args: A) => Promise<R> {
  const { store, consumer, keyOf, responseHook } = options;
  if (typeof store?.claim !== 'function') throw new ConfigurationError('makeIdempotent needs a store (an IdempotencyStore)');
  if (keyOf === undefined && consumer === undefined) throw new ConfigurationError('makeIdempotent needs a consumer name or a keyOf function');
  if (consumer !== undefined) assertValidKey({ consumer, key: 'check' });
  const leaseMs = leaseMsOption(options.leaseMs ?? store.leaseMs ?? 5 * 60_000);
  const clock = options.clock ?? systemClock;
  const observe = safeObserver(options.observer);
  const payloadOf = options.payloadOf ?? ((...args: A) => args[0]);

  return async function idempotent(this: T, ...args: A): Promise<R> {
    const context = invocationContextOf(args);
    const key = keyOf ? keyOf(...args) : defaultInvocationKey(consumer as string, args[0], context);
    const digest = payloadDigest(payloadOf(...args));
    const readFirst = options.readFirstOnRedelivery !== false && (deliveryCountOf(context) ?? 1) > 1;
    const outcome = await store.claim(key, digest, { leaseMs, readFirst });
    observe({ key, outcome: outcome.kind, attempt: 'claim' in outcome ? outcome.claim.attempt : outcome.record.attempt });
    switch (outcome.kind) {
      case 'duplicate': {
        const stored = outcome.record.result as R;
        return responseHook ? responseHook(stored, { record: outcome.record, cached: outcome.cached }, ...args) : stored;
      }
      case 'inProgress':
        throw new KeyInProgressError(scopedKeyString(key), outcome.record.leaseExpiresAtMs, outcome.record.attempt);
      case 'keyReused':
        throw new KeyReusedError(scopedKeyString(key), outcome.record.digest, digest);
      case 'claimed':
      case 'reclaimed':
        break;
    }
    const lease = new LeaseHeartbeat(store, outcome.claim, leaseMs, { nowMs: () => clock.nowMs() });
    lease.start(options.heartbeat !== false);
    const scope: IdempotencyScope = {
      key,
      get claim() {
        return lease.claim;
      },
      get signal() {
        return lease.signal;
      },
      renewLease: () => lease.renew(),
    };
    // The caller needs the failure's error, not the release's: a failed release is reported to the observer.
    const releaseAfter = (claim: Claim, error: unknown): Promise<void> =>
      store.release(claim, describeError(error)).then(
        () => observe({ key, outcome: 'released', attempt: claim.attempt }),
        (releaseError: unknown) => observe({ key, outcome: 'releaseFailed', attempt: claim.attempt, reason: describeError(releaseError) }),
      );
    let result: R;
    try {
      result = await scopes.run(scope, () => handler.apply(this, args));
    } catch (error) {
      const claim = await lease.stop();
      if (!lease.lost) await releaseAfter(claim, error);
      throw error;
    }
    const claim = await lease.stop();
    if (lease.lost) {
      observe({ key, outcome: 'leaseLost', attempt: claim.attempt, reason: describeError(lease.lossReason) });
      lease.throwIfLost();
    }
    try {
      await store.complete(claim, result);
    } catch (error) {
      if (!(error instanceof LeaseLostError)) await releaseAfter(claim, error);
      throw error;
    }
    observe({ key, outcome: 'completed', attempt: claim.attempt });
    return result;
  };
}

/** The observer, made unable to throw into the workflow (telemetry must never lock a key). */
export function safeObserver(observer: IdempotencyObserver | undefined): IdempotencyObserver {
  return (event) => {
    try {
      observer?.(event);
    } catch {
      // ignored on purpose: see IdempotencyObserver
    }
  };
}

/** A short reason for a release: the error's class and message, never a payload. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return `non-error thrown: ${typeof error}`;
}
