import { KEY_MEMORY_TRUSTED_SHARE } from '../config/callTiming';
import type { Settings } from '../config/settings';

/**
 * What the payment provider offers to tell whether a call under an `Idempotency-Key` already charged, declared in
 * the settings, never assumed (docs/DESIGN.md "Payments: look before you charge again"):
 *
 * - `PAYMENT_PROVIDER_KEY_MEMORY_HOURS`: how long the provider remembers a key (Stripe: 24 h). Inside that memory a
 *   call repeated with the same key and body is answered with the first call's result: no look-up is needed.
 * - `PAYMENT_PROVIDER_LOOKUP`: how a charge can be found by its key once the provider may have forgotten it:
 *   `none` (Stripe's `POST /v1/charges` has no such list) or `by-key` (`GET /v1/charges?idempotency_key=K`, the
 *   contract of tools/fakeProvider). Another provider's look-up (e.g. Stripe's search by metadata, which indexes with
 *   a delay) is another value behind the same seam: `ChargeLookup` in PaymentProviderClient.ts.
 *
 * Where neither can decide (a call that may have charged, made longer ago than the key memory, and no look-up) the
 * payment is held for an operator with its reason ({@link HELD_FOR_OPERATOR}), never charged blind.
 */
export type ProviderLookup = Settings['PAYMENT_PROVIDER_LOOKUP'];
export const PROVIDER_LOOKUPS: readonly ProviderLookup[] = ['none', 'by-key'];

/** The provider's declared capability, as a run carries it in its input (JSON: plain numbers). */
export interface ProviderCapability {
  readonly lookup: ProviderLookup;
  /** `PAYMENT_PROVIDER_KEY_MEMORY_HOURS`; 0: the provider keeps no keys (every call must look up first). */
  readonly keyMemoryHours: number;
}

/** Share of the declared key memory a repeated call may rely on (src/config/callTiming.ts: the rest covers a call's lease). */
export { KEY_MEMORY_TRUSTED_SHARE };

/** The `code` of a `failed` result that waits for an operator because nothing could decide whether it charged. */
export const HELD_FOR_OPERATOR = 'held-for-operator';

/** The capability the settings declare. */
export function providerCapabilityOf(settings: Pick<Settings, 'PAYMENT_PROVIDER_LOOKUP' | 'PAYMENT_PROVIDER_KEY_MEMORY_HOURS'>): ProviderCapability {
  return { lookup: settings.PAYMENT_PROVIDER_LOOKUP, keyMemoryHours: settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS };
}

/**
 * Runs started before the capability was declared carry the old `PAYMENT_PROVIDER_LOOKUP` mode instead; a replay
 * must decide as they did: `uncertain` = by key, no memory relied on; `always` = by key, no memory; `off` = never.
 */
export type LegacyLookupMode = 'uncertain' | 'always' | 'off';

/** What a run knows before a provider call. */
export interface LookupCase {
  /** 0 for the run's first provider call; n for its n-th retry after a transient failure (which may have charged). */
  readonly round: number;
  /** The entity's `begin` said an earlier run may have called the provider (it was in progress or failed). */
  readonly entityUncertain: boolean;
  /**
   * How long ago the key's record was created (so at least how long ago any earlier call of it could have been
   * made), at this call; undefined when unknown (then no memory is relied on).
   */
  readonly keyAgeMs?: number;
}

/** The decision before one provider call. */
export type ProviderCallPlan =
  /** Call (again) with the same key: nothing earlier may have charged, or the provider still remembers the key. */
  | { readonly action: 'charge' }
  /** Look the charge up by key first; charge only if none is found. */
  | { readonly action: 'lookUpFirst' }
  /** Neither key memory nor a look-up can decide: hold the payment for an operator, with the reason. */
  | { readonly action: 'hold'; readonly reason: string };

/**
 * The decision before a provider call (pure: the orchestration calls it on replay too):
 *
 * | earlier call may have charged | key age within 90 % of memory | look-up | plan |
 * |---|---|---|---|
 * | no (round 0, clean begin)      | -                              | -       | charge (unless memory 0: look up, or hold) |
 * | yes                            | yes                            | -       | charge: the same key is replayed |
 * | yes                            | no / unknown                   | by-key  | lookUpFirst |
 * | yes                            | no / unknown                   | none    | hold |
 *
 * With no key memory at all, even a first call may repeat an unseen one (the engine re-runs an activity whose host
 * died after the provider charged), so every call looks up first, or is held when there is no look-up.
 */
export function planProviderCall(provider: ProviderCapability | LegacyLookupMode, c: LookupCase): ProviderCallPlan {
  if (typeof provider === 'string') return legacyPlan(provider, c);
  const memoryMs = provider.keyMemoryHours * 3_600_000;
  const mayRepeat = memoryMs === 0 || c.round > 0 || c.entityUncertain;
  if (!mayRepeat) return { action: 'charge' };
  if (memoryMs > 0 && c.keyAgeMs !== undefined && c.keyAgeMs <= memoryMs * KEY_MEMORY_TRUSTED_SHARE) return { action: 'charge' };
  if (provider.lookup === 'by-key') return { action: 'lookUpFirst' };
  const age = c.keyAgeMs === undefined ? 'an unknown time' : `${Math.round(c.keyAgeMs / 60_000)} min`;
  return {
    action: 'hold',
    reason:
      `an earlier call may have charged and cannot be checked: the key is ${age} old, past what the provider's key memory ` +
      `covers (PAYMENT_PROVIDER_KEY_MEMORY_HOURS ${provider.keyMemoryHours} x ${KEY_MEMORY_TRUSTED_SHARE}), and PAYMENT_PROVIDER_LOOKUP is none`,
  };
}

/**
 * What the activity must check at the call when a plan relies on the provider's key memory (a repeat planned as
 * `charge` because the key was young enough): the plan is made when the run schedules the call, and the control
 * queue, the work-item queue and an activity re-run after a worker crash all come after it, unbounded. So the call
 * itself looks at the clock: past `trustedUntilMs` (the key's creation + the trusted share of the memory) it does
 * `otherwise` (look up first, or hold), never a blind repeat of a key the provider may have forgotten.
 */
export interface KeyMemoryGuard {
  readonly trustedUntilMs: number;
  readonly otherwise: { readonly lookUpFirst: true } | { readonly hold: string };
}

/** The guard for a plan made at `nowMs` (undefined when the plan does not rely on key memory). */
export function keyMemoryGuardOf(
  provider: ProviderCapability | LegacyLookupMode,
  c: LookupCase,
  plan: ProviderCallPlan,
  nowMs: number,
): KeyMemoryGuard | undefined {
  if (typeof provider === 'string' || plan.action !== 'charge' || c.keyAgeMs === undefined) return undefined;
  const memoryMs = provider.keyMemoryHours * 3_600_000;
  const mayRepeat = memoryMs === 0 || c.round > 0 || c.entityUncertain;
  if (!mayRepeat) return undefined;
  const fallback = planProviderCall(provider, { ...c, keyAgeMs: undefined });
  const trustedUntilMs = nowMs - c.keyAgeMs + memoryMs * KEY_MEMORY_TRUSTED_SHARE;
  if (fallback.action === 'lookUpFirst') return { trustedUntilMs, otherwise: { lookUpFirst: true } };
  if (fallback.action === 'hold') return { trustedUntilMs, otherwise: { hold: fallback.reason } };
  return undefined;
}

function legacyPlan(mode: LegacyLookupMode, { round, entityUncertain }: LookupCase): ProviderCallPlan {
  const look = mode === 'always' || (mode === 'uncertain' && (round > 0 || entityUncertain));
  return look ? { action: 'lookUpFirst' } : { action: 'charge' };
}
