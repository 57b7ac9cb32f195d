import {
  InvalidKeyError,
  MAX_CONSUMER_LENGTH,
  MAX_KEY_LENGTH,
  payloadDigest,
  TableIdempotencyStore,
  type IdempotencyKey,
} from 'azure-functions-idempotency/internal';
import { useAzurite } from '../support/azurite';
import { genLeaf, genString, Random } from '../support/generators';
import { FakeClock, freshTable } from '../support/tables';

/**
 * The store's own entry points over generated keys, on Azurite (seeded; PROPERTY_SEED=<seed> to
 * reproduce): a key is refused with InvalidKeyError exactly when a helper would refuse it, and every
 * accepted key gets its own record, which gives back its consumer and key unchanged.
 */

const SEED = process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : 12;
const CASES = 300;
const azuriteOf = useAzurite();

const wellFormed = (s: string): boolean => {
  try {
    encodeURIComponent(s);
    return true;
  } catch {
    return false;
  }
};
const validText = (v: unknown, max: number): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= max && wellFormed(v);

test(`store keys (seed ${SEED}): refused exactly when invalid, never a raw error; each valid key its own record, read back unchanged`, async () => {
  const r = new Random(SEED);
  const store = new TableIdempotencyStore(await freshTable(azuriteOf()), { retentionMs: 86_400_000, clock: new FakeClock() });
  const digest = payloadDigest({ seed: SEED });
  const claimed = new Map<string, IdempotencyKey>();
  let refused = 0;
  for (let i = 0; i < CASES; i++) {
    const consumer = r.chance(0.85) ? r.pick(['payments', 'orders', 'a:b', 'a', '1']) : r.chance(0.5) ? genString(r, 3) : genLeaf(r);
    const key = r.chance(0.8) ? genString(r, 6) : r.chance(0.5) ? genLeaf(r) : 'x'.repeat(r.pick([MAX_KEY_LENGTH, MAX_KEY_LENGTH + 1]));
    const candidate = { consumer, key } as IdempotencyKey;
    const valid = validText(consumer, MAX_CONSUMER_LENGTH) && consumer.trim() === consumer && validText(key, MAX_KEY_LENGTH);
    const identity = valid ? JSON.stringify([consumer, key]) : '';
    const outcome = await store.claim(candidate, digest).then(
      (o) => o,
      (error: unknown) => error,
    );
    if (!valid) {
      if (!(outcome instanceof InvalidKeyError))
        throw new Error(`seed ${SEED}: ${String(consumer)} / ${String(key)} should be an InvalidKeyError, got ${String(outcome)}`);
      refused++;
      continue;
    }
    const kind = (outcome as { kind?: string }).kind;
    // A key seen before is in progress (our own earlier claim); a new one must be claimed, not meet another key's record.
    expect(kind).toBe(claimed.has(identity) ? 'inProgress' : 'claimed');
    claimed.set(identity, candidate);
  }
  for (const key of claimed.values()) expect(await store.get(key)).toMatchObject({ consumer: key.consumer, key: key.key });
  expect(claimed.size).toBeGreaterThan(CASES * 0.3);
  expect(refused).toBeGreaterThan(CASES * 0.05);
});
