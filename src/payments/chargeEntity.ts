import type { ChargeResult } from './schema';

/**
 * State of the `paymentCharge` Durable entity, one per idempotency key. It records that a
 * provider call is in progress before the call, and its result after, fenced by the claim's
 * attempt number: an operation from an older attempt than the one on record is rejected.
 *
 * ```
 *  idle --begin(a)--> inProgress(a) --complete(a, r)--> completed(r)   (final: first result wins)
 *                          |  ^  \--fail(a, why)--> failed(a) --begin(a' >= a)--> inProgress(a')
 *                          |  '--begin(a' >= a)  (a crashed run, or a takeover, calls again)
 * ```
 * `begin` answers `uncertain` from inProgress or failed, and from idle for attempt > 1 (an earlier attempt may have charged).
 * A `begin` the same run sends again (its `runKey`: a re-run episode re-sends what it sent, with a new request id the
 * entity cannot de-duplicate: issue 51 item 5) gets the first `begin`'s answer, and changes nothing.
 */
export type ChargeEntityState =
  | { readonly status: 'idle' }
  | {
      readonly status: 'inProgress';
      readonly attempt: number;
      readonly startedAtMs: number;
      /** The run that began it (absent: runs before issue 51 item 5) and what its `begin` was answered. */
      readonly runKey?: string;
      readonly uncertain?: boolean;
    }
  | { readonly status: 'failed'; readonly attempt: number; readonly reason: string; readonly failedAtMs: number }
  | { readonly status: 'completed'; readonly attempt: number; readonly result: ChargeResult; readonly completedAtMs: number };

export type ChargeEntityOperation =
  | { readonly name: 'begin'; readonly attempt: number; readonly runKey?: string }
  | { readonly name: 'complete'; readonly attempt: number; readonly result: ChargeResult }
  | { readonly name: 'fail'; readonly attempt: number; readonly reason: string }
  | { readonly name: 'get' };

/** What an operation answers to its caller (the orchestration). */
export type ChargeEntityReply =
  /** `uncertain`: an earlier attempt began (in progress or failed) and may have reached the provider: look before charging. */
  | { readonly decision: 'proceed'; readonly uncertain?: boolean }
  | { readonly decision: 'alreadyCompleted'; readonly result: ChargeResult }
  | { readonly decision: 'stale'; readonly currentAttempt: number }
  | { readonly decision: 'recorded' }
  | { readonly decision: 'state'; readonly state: ChargeEntityState };

export const INITIAL_CHARGE_STATE: ChargeEntityState = { status: 'idle' };

/** Applies one operation: pure, so every state x operation is tested without the Durable runtime. */
export function applyChargeOperation(
  state: ChargeEntityState | undefined,
  operation: ChargeEntityOperation,
  nowMs: number,
): { state: ChargeEntityState; reply: ChargeEntityReply } {
  const current = state ?? INITIAL_CHARGE_STATE;
  if (operation.name === 'get') return { state: current, reply: { decision: 'state', state: current } };
  if (current.status === 'completed') {
    // Final: the first recorded result stands for every later run, stale or not.
    return { state: current, reply: { decision: 'alreadyCompleted', result: current.result } };
  }
  if (current.status !== 'idle' && operation.attempt < current.attempt) {
    return { state: current, reply: { decision: 'stale', currentAttempt: current.attempt } };
  }
  switch (operation.name) {
    case 'begin': {
      // The same run's begin again (a re-run episode re-sent it): the first answer, nothing changed.
      if (current.status === 'inProgress' && operation.runKey !== undefined && current.runKey === operation.runKey && current.attempt === operation.attempt)
        return { state: current, reply: current.uncertain ? { decision: 'proceed', uncertain: true } : { decision: 'proceed' } };
      // From inProgress or failed an earlier run (a crashed one, a takeover's predecessor) may have charged; so may
      // one before an idle entity that is asked for attempt > 1 (a takeover, an operator's retry, the reconciler):
      // its entity was purged or never written, so only the provider can say.
      const uncertain = !(current.status === 'idle' && operation.attempt <= 1);
      const runOf = operation.runKey === undefined ? {} : { runKey: operation.runKey, uncertain };
      return {
        state: { status: 'inProgress', attempt: operation.attempt, startedAtMs: nowMs, ...runOf },
        reply: uncertain ? { decision: 'proceed', uncertain: true } : { decision: 'proceed' },
      };
    }
    case 'complete':
      return {
        state: { status: 'completed', attempt: operation.attempt, result: operation.result, completedAtMs: nowMs },
        reply: { decision: 'recorded' },
      };
    case 'fail':
      return {
        state: { status: 'failed', attempt: operation.attempt, reason: operation.reason.slice(0, 500), failedAtMs: nowMs },
        reply: { decision: 'recorded' },
      };
  }
}
