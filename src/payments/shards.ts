import { createHash } from 'node:crypto';
import { ConfigurationError } from 'azure-functions-idempotency';
import type { ZodType } from 'zod';
import type { PaymentRequested } from './schema';

/**
 * Payments routed to N task hubs by key (issue 52, docs/DESIGN.md "Past one task hub"): each shard is a Function App
 * with its own task hub, storage account and queue; a payment belongs to shard `shardOf(paymentId, N)`, always the
 * same one, so its record, its run and its entity live in one hub. N = 1 is the unsharded deployment, unchanged.
 */
export interface ShardLayout {
  /** `PAYMENT_SHARD_COUNT` (N). */
  readonly count: number;
  /** `PAYMENT_SHARD_INDEX`: this app's shard, 0 to N - 1. */
  readonly index: number;
  /** The queues' common name: shard i's queue is `<base>-<i>` (N = 1: the base itself). */
  readonly baseQueue: string;
}

/** Most shards a layout may name (64 task hubs: 64 storage accounts; an account limit per subscription and region is 250). */
export const MAX_SHARDS = 64;

/**
 * The shard that owns `paymentId`: the first 32 bits of SHA-256 of its UTF-8 bytes, big-endian, modulo N. Stable
 * across processes, versions and languages (a producer in another stack computes the same); the modulo's bias at
 * N <= 64 is below 2^-26.
 */
export function shardOf(paymentId: string, count: number): number {
  if (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS) throw new RangeError(`a shard count is an integer from 1 to ${MAX_SHARDS}, got ${count}`);
  if (count === 1) return 0;
  return createHash('sha256').update(paymentId, 'utf8').digest().readUInt32BE(0) % count;
}

/** The queue of shard `shard` (N = 1: the base name, today's queue). */
export function shardQueue(layout: Pick<ShardLayout, 'count' | 'baseQueue'>, shard: number): string {
  return layout.count === 1 ? layout.baseQueue : `${layout.baseQueue}-${shard}`;
}

/**
 * The layout from the settings: N, this app's index, and the queues' base, read off this app's own queue name, which
 * must be `<base>-<index>` when N > 1 (the deployment names them so; a name that does not say which shard it is is a
 * misconfiguration: refused at start, before any message is taken).
 * @throws ConfigurationError on an index outside 0..N-1 or a queue name that does not end in `-<index>`
 */
export function shardLayoutOf(settings: { PAYMENT_SHARD_COUNT: number; PAYMENT_SHARD_INDEX: number; PAYMENTS_QUEUE_NAME: string }): ShardLayout {
  const count = settings.PAYMENT_SHARD_COUNT;
  const index = settings.PAYMENT_SHARD_INDEX;
  if (index >= count) throw new ConfigurationError(`PAYMENT_SHARD_INDEX ${index} is not a shard of ${count} (0 to ${count - 1})`);
  if (count === 1) return { count, index, baseQueue: settings.PAYMENTS_QUEUE_NAME };
  const suffix = `-${index}`;
  if (!settings.PAYMENTS_QUEUE_NAME.endsWith(suffix) || settings.PAYMENTS_QUEUE_NAME.length === suffix.length)
    throw new ConfigurationError(`PAYMENTS_QUEUE_NAME must be <base>${suffix} on shard ${index} of ${count}, got ${settings.PAYMENTS_QUEUE_NAME}`);
  return { count, index, baseQueue: settings.PAYMENTS_QUEUE_NAME.slice(0, -suffix.length) };
}

/**
 * The payment schema as shard `layout.index` accepts it: a payment another shard owns is refused with the shard it
 * belongs to, so the consumer parks it with that reason (a producer that routes by another rule, or a message sent
 * before a change of N: it must never be claimed here, where its key's record and run are not).
 */
export function ownedBy<T extends ZodType<PaymentRequested>>(schema: T, layout: Pick<ShardLayout, 'count' | 'index'> | undefined): T {
  if (!layout || layout.count === 1) return schema;
  return schema.superRefine((payment, context) => {
    const owner = shardOf(payment.paymentId, layout.count);
    if (owner !== layout.index)
      context.addIssue({
        code: 'custom',
        message: `misrouted: payment ${payment.paymentId} belongs to shard ${owner} of ${layout.count}, this is shard ${layout.index}`,
      });
  });
}
