import type { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { Clock } from 'azure-functions-idempotency/internal';
import { CHARGE_ENTITY } from './durableCharge';

/** What one purge did: charge orchestrations and their `paymentCharge` entities removed from the task hub. */
export interface DurablePurgeReport {
  /** Final charge orchestrations created before the cutoff that the query returned. */
  readonly found: number;
  readonly orchestrations: number;
  readonly entities: number;
  /** True when the budget ran out before every one found was purged (the next tick goes on). */
  readonly stoppedByBudget: boolean;
}

/** The charge orchestration instance ids start with this (`chargeInstanceId`); the entity's key is the rest. */
const CHARGE_INSTANCE_PREFIX = 'payment-';
const FINAL = [df.OrchestrationRuntimeStatus.Completed, df.OrchestrationRuntimeStatus.Failed, df.OrchestrationRuntimeStatus.Terminated];

/** The invocation's Durable client when the function has a `durableClient` input, else undefined. */
export function durableClientOf(context: InvocationContext): df.DurableClient | undefined {
  return context.options.extraInputs.some((input) => input.type === 'durableClient') ? df.getClient(context) : undefined;
}

/**
 * Removes Durable's own records of old payments from the task hub (docs/durable.md, "Lifecycle"): every charge
 * orchestration that is final (completed, failed, terminated) and was created before `cutoffMs`, with its
 * `paymentCharge` entity (same key). The cutoff is the dedup retention before now: the record the
 * orchestration worked for was written at or after its creation, so by then the sweep has deleted it or it is
 * completed (the entity and the orchestration are no longer read). The entity goes first: a purge stopped
 * between the two leaves the orchestration, which the next run finds again. Purging a missing id is a no-op.
 */
export async function purgeDurableRecords(
  client: df.DurableClient,
  options: { cutoffMs: number; budgetMs: number; clock: Clock },
): Promise<DurablePurgeReport> {
  const deadline = options.clock.nowMs() + options.budgetMs;
  const old = await client.getStatusBy({ createdTimeFrom: new Date(0), createdTimeTo: new Date(options.cutoffMs), runtimeStatus: FINAL });
  const charges = old.filter((s) => s.instanceId.startsWith(CHARGE_INSTANCE_PREFIX));
  let orchestrations = 0;
  let entities = 0;
  for (const status of charges) {
    if (options.clock.nowMs() >= deadline) return { found: charges.length, orchestrations, entities, stoppedByBudget: true };
    const entityKey = status.instanceId.slice(CHARGE_INSTANCE_PREFIX.length);
    entities += (await client.purgeInstanceHistory(`@${CHARGE_ENTITY.toLowerCase()}@${entityKey}`)).instancesDeleted;
    orchestrations += (await client.purgeInstanceHistory(status.instanceId)).instancesDeleted;
  }
  return { found: charges.length, orchestrations, entities, stoppedByBudget: false };
}
