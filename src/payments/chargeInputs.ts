import type { HandOffPlan } from './handOffPlan';
import type { KeyMemoryGuard, LegacyLookupMode, ProviderCapability } from './providerLookup';
import type { RecordWriteCarry } from './recordWriteRetry';
import type { PaymentRequested } from './schema';

/** The inputs of a charge run and of its provider activity (src/payments/chargeOrchestration.ts runs them). */

/** Input of one orchestration run: everything the run needs, nothing of the message but the payment. */
export interface ChargeOrchestrationInput {
  /** Sent to the provider as `Idempotency-Key` (the paymentId, the same on every call for this payment). */
  readonly idempotencyKey: string;
  /** Key of the `paymentCharge` entity: one per record lifetime and payload (`chargeEntityKey`, a hash: always a valid entity key). */
  readonly entityKey: string;
  /** Digest of the payment this run was started for (the run answers only that payload). */
  readonly digest?: string;
  /** Fencing number of the claim that started this run. */
  readonly attempt: number;
  readonly payment: PaymentRequested;
  /** The message's correlation id, passed on to the provider for end-to-end tracing. */
  readonly correlationId?: string;
  /**
   * Handoff design (docs/DESIGN.md "Payments: hand off, don't hold"): the run owns the record. It retries
   * transient provider failures with durable timers for the plan's budget and completes the dedup record
   * itself (fenced by the claim's attempt). Absent: the holding design (the delivery waits and completes it).
   */
  readonly handoff?: HandOffPlan;
  /**
   * The provider's declared capability (`PAYMENT_PROVIDER_LOOKUP`, `PAYMENT_PROVIDER_KEY_MEMORY_HOURS`) as the starter
   * read it (src/payments/providerLookup.ts): a replay decides the same way whatever the worker's settings.
   */
  readonly provider?: ProviderCapability;
  /** The key's age when the run was started (starter's clock - the record's creation); the run adds its own elapsed time. */
  readonly keyAgeAtStartMs?: number;
  /**
   * When the key's first provider call could have been made, epoch ms (the record generation's creation: no call
   * precedes its claim; an operator's check at the provider moves it to the check). The run measures the key's age from
   * it at each round (`currentUtcDateTime - keyOriginMs`), so every wait before and inside the run counts: the start
   * queue, the first episode, the entity's `begin`, a suspension. Absent (runs started before it existed): the age at
   * start plus the loop's own elapsed time. Both present: the larger (a starter whose clock runs ahead of the engine's,
   * as the demo's time jumps do, is not read as a young key).
   */
  readonly keyOriginMs?: number;
  /**
   * This generation of the record began at attempt > 1: an expired record was taken over (a new payment under a reused
   * id, an operator's retry of a record past its retention). An earlier generation may have called the provider with
   * this key at any time before `keyOriginMs`, so the run relies on no key memory and its first call is uncertain too
   * (look up first, or hold).
   */
  readonly keyUsedBefore?: boolean;
  /** Runs started before `provider` existed: the old when-to-look mode (absent too: `uncertain`). */
  readonly providerLookup?: LegacyLookupMode;
  /**
   * Holding design: the run's provider retries instead of `PROVIDER_RETRY` (which the deliveries' patience counts:
   * chargePatience.ts). Only the local executor's tests set it (short intervals); the app never does.
   */
  readonly providerRetry?: ProviderRetry;
  /**
   * A handoff run continued as new in its record write (`continueAsNew`, history bounded): the write's position. The
   * run goes straight back to writing `result` (no entity, no provider).
   */
  readonly recordWrite?: RecordWriteCarry;
}

/** Provider calls of a holding run: `maxNumberOfAttempts` in all, the first retry after `firstRetryIntervalMs`, times `backoffCoefficient` each. */
export interface ProviderRetry {
  readonly firstRetryIntervalMs: number;
  readonly maxNumberOfAttempts: number;
  readonly backoffCoefficient: number;
}

export interface ChargeActivityInput {
  readonly idempotencyKey: string;
  readonly payment: PaymentRequested;
  readonly correlationId?: string;
  /** Look up the charge made under the key first and return it without charging (an earlier call may have charged). */
  readonly lookUpFirst?: boolean;
  /** Call nothing: hold the payment for an operator with this reason (answered `failed`, code `held-for-operator`). */
  readonly hold?: string;
  /**
   * Charge nothing: look the key's charge up and answer it; none found answers `failed` with this reason (the run's
   * budget is spent and an earlier call may have charged: only the provider can say which). A look-up that fails holds.
   */
  readonly lookUpOnly?: { readonly failedReason: string };
  /**
   * The plan relied on the provider's key memory: the activity checks its own clock at the call and, past
   * `trustedUntilMs`, looks up first or holds instead (queue waits after the plan are unbounded: `KeyMemoryGuard`).
   */
  readonly keyMemory?: KeyMemoryGuard;
  /** How long the call's announcement on the record holds it (`CALL_LEASE_MS` when absent: the local rigs shorten it). */
  readonly callLeaseMs?: number;
  /**
   * Epoch ms: a charge the provider made under the key before it is another payment's (the id reused after its record
   * expired): a look-up does not take it for this payment's, a replay of it is a key reused. This generation's origin
   * less a clock-skew margin; absent (runs started before it): not checked.
   */
  readonly chargesFromMs?: number;
  /**
   * An earlier call of the key may have charged (a retry round, an uncertain entity, a key used before): a rejection
   * other than the provider's idempotency answer (a 400 with its error body: validation runs before its idempotency) is
   * then not its word about that charge, and is retried (`ProviderRefusedError`). Absent: a first call's rejection stands.
   */
  readonly mayRepeat?: true;
  /** The charge is sent only while this much of the call's lease is left (`RetryBudget.postWindowMs`; absent: not checked). */
  readonly postWindowMs?: number;
  /**
   * The look-up must see every earlier call of the attempt, since the provider's key memory does not replay them (it
   * keeps only successes: a call that failed after its work is executed again; or it keeps nothing): the call is not
   * made while an earlier announced call's lease runs (`CallInFlightError`: the round is tried again).
   */
  readonly lookUpSeesEarlierCalls?: true;
  /**
   * A first call's plan for when it turns out to repeat an earlier call of this attempt: the engine runs an activity
   * again (its worker died after the provider answered, its work item's delete failed), and the record then shows a
   * call announced since the claim. The plan of a retry round, so a copy is never a blind repeat where the provider's
   * memory would not replay the first call's work.
   */
  readonly ifRepeat?: Pick<ChargeActivityInput, 'lookUpFirst' | 'hold' | 'keyMemory' | 'mayRepeat' | 'lookUpSeesEarlierCalls'>;
}
