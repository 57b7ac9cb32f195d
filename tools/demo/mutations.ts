import type { ChargeResult } from '../../src/payments/schema';
import type { PaymentsRig } from '../local/paymentsRig';
import type { LogicalMessage } from './paymentsWorkload';

/** The deliberate mistakes `npm run demo -- --mutate <name>` can make (the ledger check must show each one). */
export const DEMO_MUTATIONS = ['conflict-rejected'] as const;
export type DemoMutation = (typeof DEMO_MUTATIONS)[number];

/** How many payments a mutation touches: few, so the verdict names each one. */
export const MUTATED_PAYMENTS = 3;

/**
 * Makes the mistake of `mutation` in the run's record writes. `conflict-rejected` is the simulator's defect of that
 * name (a 409, "the key is still in flight", read as a rejection), made at its consequence: the demo's provider never
 * answers 409 to the app's calls, so the record writes of the first {@link MUTATED_PAYMENTS} chargeable payments of
 * the workload turn the provider's `succeeded` into `rejected (409)`. The customers are charged and their records say
 * they were not: exactly what the ledger check exists to find (one discrepancy each, `record-not-succeeded`).
 */
export function recordMistakes(rig: PaymentsRig, mutation: DemoMutation, messages: readonly LogicalMessage[]): ReadonlySet<string> {
  const chosen = new Set(
    messages
      .filter((m) => m.kind === 'charge' && m.messageId !== undefined)
      .slice(0, MUTATED_PAYMENTS)
      .map((m) => m.messageId!),
  );
  const store = rig.store;
  const complete = store.complete.bind(store);
  store.complete = async (claim, result, effects, options) => {
    const succeeded = (result as ChargeResult | undefined)?.status === 'succeeded';
    const mistaken: ChargeResult | undefined =
      mutation === 'conflict-rejected' && succeeded && chosen.has(claim.key.key)
        ? { status: 'rejected', reason: 'payment provider answered 409 (read as a rejection: --mutate conflict-rejected)' }
        : undefined;
    return complete(claim, mistaken ?? result, effects, options);
  };
  return chosen;
}
