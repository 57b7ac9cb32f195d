import { assertValidKey, scopedKeyString, type IdempotencyKey } from './keys';
import { sha256Hex } from './sha256';

/**
 * The id of a key's record in every store (the Table store's RowKey, the Cosmos store's document id and partition
 * key, the memory store's `recordId`): SHA-256 (hex, 64 characters) of the unambiguous scoped key. Hex is always
 * valid there (no `/ \ # ?`, no control characters); SHA-256 makes collisions impractical.
 * @throws InvalidKeyError for a key the helpers of `keys.ts` would not build (see `assertValidKey`).
 */
export function scopedKeyHash(key: IdempotencyKey): string {
  assertValidKey(key);
  return sha256Hex(scopedKeyString(key));
}
