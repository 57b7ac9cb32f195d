import type { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { Clock } from 'azure-functions-idempotency';
import type { ChargeOrchestrationInput } from '../payments/chargeOrchestration';
import { CHARGE_ENTITY } from './durableCharge';
import { instancePage, type HttpGet } from './durableInstances';

/** What one purge did: charge orchestrations and their `paymentCharge` entities removed from the task hub. */
export interface DurablePurgeReport {
  /** Final charge orchestrations created before the cutoff that the pages read returned. */
  readonly found: number;
  readonly orchestrations: number;
  readonly entities: number;
  /** Found, but kept: their record still exists (held by the dead-letter hold, or not settled yet). */
  readonly keptLive: number;
  /** Query pages read (each one request of at most `pageSize` instances). */
  readonly pages: number;
  /** True when the budget ran out before every one found was purged (the next tick goes on). */
  readonly stoppedByBudget: boolean;
}

/** The charge orchestration instance ids start with this (`chargeInstanceId`); the entity's key is the rest. */
const CHARGE_INSTANCE_PREFIX = 'payment-';
const FINAL = [df.OrchestrationRuntimeStatus.Completed, df.OrchestrationRuntimeStatus.Failed, df.OrchestrationRuntimeStatus.Terminated];
/** Instances per query page: one page is read, purged, then the next, so the budget bounds the reads too. */
export const PURGE_PAGE_SIZE = 100;

/** The invocation's Durable client when the function has a `durableClient` input, else undefined. */
export function durableClientOf(context: InvocationContext): df.DurableClient | undefined {
  return context.options.extraInputs.some((input) => input.type === 'durableClient') ? df.getClient(context) : undefined;
}

/**
 * True when the record this run worked for still exists: the payments record of `idempotencyKey` whose lifetime's
 * entity key is `entityKey` (a later lifetime of the key has another). Its run and entity are then still needed.
 */
export type RecordLive = (idempotencyKey: string, entityKey: string) => Promise<boolean>;

/**
 * Removes Durable's own records of old payments from the task hub (docs/durable.md, "Lifecycle"): every charge
 * orchestration that is final (completed, failed, terminated) and was created before `cutoffMs`, with its
 * `paymentCharge` entity (same key), unless its record still exists (`recordLive`): a record the dead-letter hold
 * keeps past retention, or one in progress whose run failed (the reconciler, which runs first, settles it). Such a
 * record may still be taken over, and its run then needs the entity's state ("Why the cutoff is safe"). Pages of
 * `PURGE_PAGE_SIZE` of the `payment-` ids only (`instanceIdPrefix`), each read only while the budget lasts; an empty page
 * with a continuation token goes on (Azure answers those). A run whose input has no key is kept (fails closed). The entity goes first: a purge stopped between the two
 * leaves the orchestration, which the next run finds again. Purging a missing id is a no-op.
 */
export async function purgeDurableRecords(
  client: df.DurableClient,
  options: { cutoffMs: number; budgetMs: number; clock: Clock; recordLive: RecordLive; pageSize?: number; http?: HttpGet },
): Promise<DurablePurgeReport> {
  const deadline = options.clock.nowMs() + options.budgetMs;
  const counts = { found: 0, orchestrations: 0, entities: 0, keptLive: 0, pages: 0 };
  let continuationToken: string | undefined;
  do {
    if (options.clock.nowMs() >= deadline) return { ...counts, stoppedByBudget: true };
    const pageSize = options.pageSize ?? PURGE_PAGE_SIZE;
    const filter = { createdBeforeMs: options.cutoffMs, runtimeStatus: FINAL, pageSize, continuationToken, instanceIdPrefix: CHARGE_INSTANCE_PREFIX };
    const page = await instancePage(client, filter, options.http);
    counts.pages++;
    continuationToken = page.continuationToken;
    for (const status of page.statuses.filter((s) => s.instanceId.startsWith(CHARGE_INSTANCE_PREFIX))) {
      counts.found++;
      if (options.clock.nowMs() >= deadline) return { ...counts, stoppedByBudget: true };
      const entityKey = status.instanceId.slice(CHARGE_INSTANCE_PREFIX.length);
      const key = (status.input as Partial<ChargeOrchestrationInput> | undefined)?.idempotencyKey;
      // Fails closed: a run whose input names no key (not ours, or read without its input) is kept, not purged blind.
      if (typeof key !== 'string' || (await options.recordLive(key, entityKey))) {
        counts.keptLive++;
        continue;
      }
      counts.entities += (await client.purgeInstanceHistory(`@${CHARGE_ENTITY.toLowerCase()}@${entityKey}`)).instancesDeleted;
      counts.orchestrations += (await client.purgeInstanceHistory(status.instanceId)).instancesDeleted;
    }
  } while (continuationToken);
  return { ...counts, stoppedByBudget: false };
}
