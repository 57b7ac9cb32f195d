import type { IdempotencyStore } from 'azure-functions-idempotency';
import { isMisdirected, type OwnerOf } from '../payments/shardTables';

/**
 * The HTTP functions' own records (`POST /api/payments`' Idempotency-Key records, the webhook's event ids) spread over
 * every shard's account by their key (issue 63). The provider sends every webhook to one URL, and callers usually use
 * one app's API: kept in the receiving app's account, they all land on one account (shard 0's), which at N = 5 passes
 * its request limit alone. Routed by the router's hash of the record's own key (`shardOf`, SHA-256), each key always
 * lands on the same account, so a retry or a redelivery finds its record wherever it arrives; the shards' expiry timers
 * sweep them with their own tables' records. A key whose shard this app cannot reach (no `PAYMENT_SHARD_TABLE_ENDPOINTS`),
 * and every key with one shard, stays in `own`.
 *
 * @example
 * ```ts
 * const store = spreadByKey(shards.ownerOf((tables) => httpStoreFromSettings(settings, { tableClient: tables })), own);
 * ```
 */
export function spreadByKey(ownerOf: OwnerOf<IdempotencyStore>, own: IdempotencyStore): IdempotencyStore {
  const pick = (key: string): IdempotencyStore => {
    const owner = ownerOf(key);
    return isMisdirected(owner) ? own : owner;
  };
  return {
    leaseMs: own.leaseMs,
    claim: (key, digest, options) => pick(key.key).claim(key, digest, options),
    commit: (key, digest, result, effects) => pick(key.key).commit(key, digest, result, effects),
    complete: (claim, result, effects, options) => pick(claim.key.key).complete(claim, result, effects, options),
    release: (claim, reason) => pick(claim.key.key).release(claim, reason),
    renewLease: (claim, leaseMs) => pick(claim.key.key).renewLease(claim, leaseMs),
    get: (key) => pick(key.key).get(key),
  };
}
