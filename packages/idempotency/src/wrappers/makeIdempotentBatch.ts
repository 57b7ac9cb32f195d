import { systemClock, type Clock } from '../protocol/clock';
import { ConfigurationError, IdempotencyError, InvalidKeyError, InvalidPayloadError, LeaseLostError } from '../protocol/errors';
import type { Claim, ClaimOutcome, IdempotencyStore } from '../protocol/IdempotencyStore';
import { payloadDigest } from './digest';
import { assertValidKey, scopedKeyString, type IdempotencyKey } from '../protocol/keys';
import { parkFailed, recordParkFailed, tryPark, type ParkFailedResult } from './batchParking';
import { LeaseHeartbeat } from './LeaseHeartbeat';
import { BatchIncompleteError, BatchParkReason, PARKED_RESULT, type BatchEventInfo, type BatchEventOutcome } from './batchOutcomes';
import { describeError, runInIdempotencyScope, type IdempotencyScope } from './makeIdempotent';
import { leaseMsOption } from '../protocol/options';
import type { InvocationContextLike } from './invocationKey';
import { defaultBatchEventKey } from './triggerKeys';

export { BatchIncompleteError, BatchParkReason, PARKED_RESULT, type BatchEventInfo, type BatchEventOutcome } from './batchOutcomes';
export type { ParkFailedResult } from './batchParking';

export interface MakeIdempotentBatchOptions<E, C> {
  readonly store: IdempotencyStore;
  /** The consumer: the scope of its keys. Required unless `keyOf` is given. */
  readonly consumer?: string;
  /**
   * The key of one event. Default: its CloudEvent identity (`defaultBatchEventKey`: a structured event, also as
   * bytes, or binary-mode properties of a batch whose metadata lines up with its events), never an offset or sequence number.
   */
  readonly keyOf?: (event: E, index: number, context: C | undefined) => IdempotencyKey;
  /** The part of an event whose digest detects key reuse. Default: the event. */
  readonly payloadOf?: (event: E) => unknown;
  /**
   * Where an event that cannot be processed goes, with the reason (never dropped). Called before its key is recorded
   * as done; parking must be idempotent. A retryable failure (a store outage) throws the batch (retried); any other
   * failure is tried `parkAttempts` times, then the event's idempotency record keeps it ({@link ParkFailedResult}).
   */
  readonly park: (event: E, reason: BatchParkReason, detail: string, index: number) => Promise<void>;
  /** Tries of `park` for one event before its last resort (the record). Default 3. */
  readonly parkAttempts?: number;
  /** Tries of one event in one invocation before it is parked. Default 3. */
  readonly maxAttempts?: number;
  /** Pause between tries, in ms. Default 1,000. */
  readonly retryDelayMs?: number;
  /** How long to wait for an event another invocation holds (then the batch throws). Default: the lease. */
  readonly waitBudgetMs?: number;
  /** How often to look at such an event, in ms. Default 500. */
  readonly pollMs?: number;
  /** Lease of a claim. Default: the store's `leaseMs`, else 5 minutes. */
  readonly leaseMs?: number;
  /** The store's clock. Default: the system clock. */
  readonly clock?: Clock;
}

/**
 * The batch form of `makeIdempotent`, for `cardinality: 'many'` triggers (Event Hubs): each event is
 * claimed, run and completed on its own key, in the batch's order (one partition's order).
 *
 * - **Claims in the fewest round trips**: every key of the batch at once (`store.claimMany`: the Table
 *   store inserts one transaction per table partition, and decides a replayed batch with one query per
 *   partition). Within the batch a key seen again (a producer retry landing in the same batch) is a
 *   duplicate of its first occurrence (another payload: key reused).
 * - **Duplicates** (a replay from a checkpoint, a producer retry, another instance during a partition
 *   handover) are skipped with their stored result. An event another invocation holds is waited for
 *   (completed -> duplicate; lapsed or released -> taken over), at most `waitBudgetMs`; past it the batch
 *   throws `BatchIncompleteError` with every earlier event done, so the host's retry finds them duplicates.
 * - **Failure rule**: a failing event is released and tried again in this invocation, up to `maxAttempts`
 *   (later events wait: order is kept); then it is **parked** with its reason (`park`) and recorded as done
 *   (`PARKED_RESULT`), so the batch moves on and a replay skips it. Nothing is checkpointed past an event
 *   that is neither done nor parked: a store failure, a lost lease or a failed park throws the batch, the
 *   claims not yet run are released, and the trigger's retry policy (retry forever) runs the batch again.
 *
 * @returns the handler for `(events, context)`, answering one {@link BatchEventOutcome} per event.
 */
export function makeIdempotentBatch<E, R, C = unknown>(
  handler: (event: E, context: C | undefined, info: BatchEventInfo) => R | Promise<R>,
  options: MakeIdempotentBatchOptions<E, C>,
): (events: readonly E[], context?: C) => Promise<Array<BatchEventOutcome<R>>> {
  const { store, consumer, park } = options;
  if (typeof store?.claim !== 'function') throw new ConfigurationError('makeIdempotentBatch needs a store (an IdempotencyStore)');
  if (typeof park !== 'function') throw new ConfigurationError('makeIdempotentBatch needs park(event, reason, detail): an event is never dropped');
  if (options.keyOf === undefined && consumer === undefined) throw new ConfigurationError('makeIdempotentBatch needs a consumer name or a keyOf function');
  if (consumer !== undefined) assertValidKey({ consumer, key: 'check' });
  const keyOf =
    options.keyOf ??
    ((event: E, index: number, context: C | undefined, count?: number) =>
      defaultBatchEventKey(consumer as string, event, index, context as InvocationContextLike | undefined, count));
  const payloadOf = options.payloadOf ?? ((event: E) => event);
  const leaseMs = leaseMsOption(options.leaseMs ?? store.leaseMs ?? 5 * 60_000);
  const maxAttempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new ConfigurationError(`maxAttempts must be a positive integer, got ${maxAttempts}`);
  const retryDelayMs = options.retryDelayMs ?? 1_000;
  const parkAttempts = options.parkAttempts ?? 3;
  if (!Number.isInteger(parkAttempts) || parkAttempts < 1) throw new ConfigurationError(`parkAttempts must be a positive integer, got ${parkAttempts}`);
  const waitBudgetMs = options.waitBudgetMs ?? leaseMs;
  const pollMs = options.pollMs ?? 500;
  const clock = options.clock ?? systemClock;

  return async function idempotentBatch(events: readonly E[], context?: C): Promise<Array<BatchEventOutcome<R>>> {
    const keys = events.map((event, index): IdempotencyKey | InvalidKeyError | InvalidPayloadError => {
      try {
        return options.keyOf ? options.keyOf(event, index, context) : keyOf(event, index, context, events.length);
      } catch (error) {
        if (error instanceof InvalidKeyError) return error;
        throw error;
      }
    });
    const digests = events.map((event, index) => {
      try {
        return payloadDigest(payloadOf(event));
      } catch (error) {
        if (!(error instanceof InvalidPayloadError)) throw error;
        keys[index] = error; // parked below with its reason, like a key that cannot be derived
        return '';
      }
    });
    const first = new Map<string, number>();
    keys.forEach((key, index) => {
      if (!(key instanceof IdempotencyError) && !first.has(scopedKeyString(key))) first.set(scopedKeyString(key), index);
    });
    const unique = [...first.values()];
    const requests = unique.map((index) => ({ key: keys[index] as IdempotencyKey, digest: digests[index] }));
    const claimed = store.claimMany
      ? await store.claimMany(requests, { leaseMs })
      : await sequentially(requests, (request) => store.claim(request.key, request.digest, { leaseMs }));
    const pending = new Map<number, ClaimOutcome>(unique.map((index, i) => [index, claimed[i]]));
    const outcomes: Array<BatchEventOutcome<R>> = [];
    try {
      for (const [index, event] of events.entries()) {
        const key = keys[index];
        // Past parkAttempts, `lastResort` records it (parkAndRecord's claim), else a record of its own (recordParkFailed).
        const parked = async (reason: BatchParkReason, detail: string, parkedKey?: IdempotencyKey, lastResort?: (r: ParkFailedResult) => Promise<void>) => {
          const tried = await tryPark(() => park(event, reason, detail, index), parkAttempts, retryDelayMs);
          if (tried.ok) return { kind: 'parked' as const, index, key: parkedKey, reason, detail };
          const failed = parkFailed(reason, detail, tried);
          if (lastResort) await lastResort(failed.result);
          else if (!(await recordParkFailed(store, consumer, parkedKey, digests[index], failed.result, leaseMs))) throw tried.error;
          return { kind: 'parked' as const, index, key: parkedKey, reason, detail: failed.detail };
        };
        if (key instanceof InvalidKeyError || key instanceof InvalidPayloadError) {
          outcomes.push(await parked(key instanceof InvalidKeyError ? BatchParkReason.InvalidKey : BatchParkReason.InvalidPayload, key.message));
          continue;
        }
        const firstIndex = first.get(scopedKeyString(key))!;
        if (firstIndex !== index) {
          const earlier = outcomes[firstIndex];
          outcomes.push(
            digests[firstIndex] === digests[index]
              ? { kind: 'duplicate', index, key, result: earlier.kind === 'parked' ? PARKED_RESULT : earlier.result }
              : await parked(BatchParkReason.KeyReused, `key ${JSON.stringify(scopedKeyString(key))} came earlier in this batch with another payload`, key),
          );
          continue;
        }
        const outcome = pending.get(index)!;
        pending.delete(index);
        outcomes.push(await settle(event, index, key, digests[index], outcome, parked, context));
      }
      return outcomes;
    } finally {
      // Claims not run (the batch threw): give them up so the retry takes them over at once.
      const unrun = [...pending.values()].flatMap((outcome) => ('claim' in outcome ? [outcome.claim] : []));
      await Promise.all(unrun.map((claim) => store.release(claim, 'batch stopped before this event').catch(() => undefined)));
    }
  };

  async function settle(
    event: E,
    index: number,
    key: IdempotencyKey,
    digest: string,
    initial: ClaimOutcome,
    parked: (reason: BatchParkReason, detail: string, key?: IdempotencyKey, last?: (r: ParkFailedResult) => Promise<void>) => Promise<BatchEventOutcome<R>>,
    context: C | undefined,
  ): Promise<BatchEventOutcome<R>> {
    let outcome = initial;
    let failures = 0;
    const waitUntil = clock.nowMs() + waitBudgetMs;
    for (;;) {
      if (outcome.kind === 'duplicate') return { kind: 'duplicate', index, key, result: outcome.record.result };
      if (outcome.kind === 'keyReused')
        return parked(BatchParkReason.KeyReused, `key ${JSON.stringify(scopedKeyString(key))} is on record for another payload`, key);
      if (outcome.kind === 'inProgress') {
        if (clock.nowMs() >= waitUntil) throw new BatchIncompleteError(index, scopedKeyString(key));
        await sleep(pollMs);
        outcome = await store.claim(key, digest, { leaseMs, readFirst: true });
        continue;
      }
      const claim = await freshEnough(outcome.claim);
      if (!claim) {
        outcome = await store.claim(key, digest, { leaseMs, readFirst: true });
        continue;
      }
      const run = await runOnce(event, index, key, claim, context);
      if ('result' in run) {
        try {
          await store.complete(run.claim, run.result);
          return { kind: 'completed', index, key, attempt: run.claim.attempt, result: run.result };
        } catch (error) {
          if (error instanceof IdempotencyError && !error.retryable && !(error instanceof LeaseLostError)) {
            return parkAndRecord(run.claim, (last) => parked(BatchParkReason.ResultNotStorable, describeError(error), key, last));
          }
          throw error; // a store failure or a lost lease: the batch is retried
        }
      }
      failures++;
      if (failures >= maxAttempts) {
        const detail = `${failures} tries failed; last: ${describeError(run.error)}`;
        return parkAndRecord(run.claim, (last) => parked(BatchParkReason.RetriesExhausted, detail, key, last));
      }
      await store.release(run.claim, describeError(run.error));
      await sleep(retryDelayMs);
      outcome = await store.claim(key, digest, { leaseMs });
    }
  }

  /** Runs the handler on one event under a heartbeat. A lost lease throws (the batch is retried). */
  async function runOnce(
    event: E,
    index: number,
    key: IdempotencyKey,
    claim: Claim,
    context: C | undefined,
  ): Promise<{ claim: Claim; result: R } | { claim: Claim; error: unknown }> {
    const lease = new LeaseHeartbeat(store, claim, leaseMs, { nowMs: () => clock.nowMs() }).start();
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
    let result: R;
    try {
      result = await runInIdempotencyScope(scope, () => handler(event, context, { index, key, attempt: claim.attempt }));
    } catch (error) {
      const current = await lease.stop();
      lease.throwIfLost();
      return { claim: current, error };
    }
    const current = await lease.stop();
    lease.throwIfLost();
    return { claim: current, result };
  }

  /** Parks the event, then records its key as done so a replay skips it (the last resort, when parking kept failing). */
  async function parkAndRecord(claim: Claim, parkIt: (lastResort: (r: ParkFailedResult) => Promise<void>) => Promise<BatchEventOutcome<R>>) {
    let recorded = false;
    const lastResort = async (result: ParkFailedResult) => void (await store.complete(claim, result), (recorded = true));
    let outcome: BatchEventOutcome<R>;
    try {
      outcome = await parkIt(lastResort);
    } catch (error) {
      if (!recorded) await store.release(claim, `parking failed: ${describeError(error)}`).catch(() => undefined);
      throw error;
    }
    if (!recorded) await store.complete(claim, PARKED_RESULT);
    return outcome;
  }

  /** A pre-claimed event's claim with at least half a lease left (renewed if not); undefined if it was taken over. */
  async function freshEnough(claim: Claim): Promise<Claim | undefined> {
    if (claim.leaseExpiresAtMs - clock.nowMs() >= leaseMs / 2) return claim;
    try {
      return await store.renewLease(claim, leaseMs);
    } catch (error) {
      if (error instanceof LeaseLostError) return undefined;
      throw error;
    }
  }
}

async function sequentially<T, U>(items: readonly T[], call: (item: T) => Promise<U>): Promise<U[]> {
  const out: U[] = [];
  for (const item of items) out.push(await call(item));
  return out;
}

function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}
