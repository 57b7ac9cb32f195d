import { keyFromMessageId, RecordStatus, type ReopenableStore } from 'azure-functions-idempotency';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import type { ChargeResult } from '../../src/payments/schema';
import type { LogicalMessage } from './paymentsWorkload';

/** The deliberate mistakes `npm run demo -- --mutate <name>` can make (the ledger check must show each one). */
export const DEMO_MUTATIONS = ['conflict-rejected'] as const;
export type DemoMutation = (typeof DEMO_MUTATIONS)[number];

/** How many payments a mutation touches: few, so the verdict names each one. */
export const MUTATED_PAYMENTS = 3;

/** What {@link recordMistakes} rewrote. */
export interface MistakesMade {
  readonly paymentIds: readonly string[];
}

/**
 * Makes the mistake of `mutation` in the run's records. `conflict-rejected` is the simulator's defect of that name (a
 * 409, "the key is still in flight", read as a rejection), made at its consequence: the customer charged and the
 * record saying `rejected`. The charge runs execute in the Durable engine's own worker process, where the demo cannot
 * change the app's code, and the demo's provider answers no 409 to them; so, once the runs are drained, the records of
 * the first {@link MUTATED_PAYMENTS} chargeable payments completed `succeeded` are rewritten `rejected (409)` through
 * the store (reopened, taken over, completed: as a defective run would have written them). The demo's other checks
 * read the results before this (they see the run's truth); only the ledger check can see the mistake, and must: one
 * discrepancy each (`record-not-succeeded`). Call it once, before the ledger check first covers those charges.
 */
export async function recordMistakes(
  store: Pick<ReopenableStore, 'get' | 'reopen' | 'claim' | 'complete'>,
  mutation: DemoMutation,
  messages: readonly LogicalMessage[],
): Promise<MistakesMade> {
  const rejected: ChargeResult = { status: 'rejected', reason: `payment provider answered 409 (read as a rejection: --mutate ${mutation})` };
  const paymentIds: string[] = [];
  for (const m of messages) {
    if (paymentIds.length >= MUTATED_PAYMENTS) break;
    if (m.kind !== 'charge' || m.messageId === undefined) continue;
    const key = keyFromMessageId(PAYMENTS_CONSUMER, m.messageId);
    const record = await store.get(key);
    if (record?.status !== RecordStatus.Completed || (record.result as ChargeResult | undefined)?.status !== 'succeeded') continue;
    if ((await store.reopen(record, `demo --mutate ${mutation}`)).kind !== 'reopened') continue;
    const claimed = await store.claim(key, record.digest);
    if (claimed.kind !== 'claimed' && claimed.kind !== 'reclaimed') continue;
    await store.complete(claimed.claim, rejected);
    paymentIds.push(m.messageId);
  }
  return { paymentIds };
}
