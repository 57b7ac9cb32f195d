import type { Settings } from '../config/settings';

/**
 * `PAYMENT_PROVIDER_LOOKUP`: when a provider call is preceded by a look-up of the charge made under its
 * `Idempotency-Key` (docs/DESIGN.md "Payments: look before you charge again"). A call that may have charged is
 * never repeated blind: a provider that forgot the key (or never keeps keys) would charge again.
 * - `uncertain` (default): look when an earlier call may have reached the provider (a retry after a transient
 *   failure, or the entity had an unfinished or failed attempt on record);
 * - `always`: look before every call (one GET per payment; for providers without key memory: it also covers a
 *   crash after the activity charged and before the engine recorded its result, which leaves no trace in the run);
 * - `off`: never (the provider's key memory is the only guard).
 */
export type ProviderLookupMode = Settings['PAYMENT_PROVIDER_LOOKUP'];
export const PROVIDER_LOOKUP_MODES: readonly ProviderLookupMode[] = ['uncertain', 'always', 'off'];

/** What a run knows before a provider call. */
export interface LookupCase {
  /** 0 for the run's first provider call; n for its n-th retry after a transient failure (which may have charged). */
  readonly round: number;
  /** The entity's `begin` said an earlier run may have called the provider (it was in progress or failed). */
  readonly entityUncertain: boolean;
}

/** Whether to look the charge up before this provider call (pure: the orchestration calls it on replay too). */
export function shouldLookUp(mode: ProviderLookupMode, { round, entityUncertain }: LookupCase): boolean {
  switch (mode) {
    case 'off':
      return false;
    case 'always':
      return true;
    case 'uncertain':
      return round > 0 || entityUncertain;
  }
}
