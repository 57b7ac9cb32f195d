import { keyFromMessageId, payloadDigest, TableIdempotencyStore, type ClaimOutcome } from '../../src/core';
import type { BenchTables } from './BenchTables';
import { runConcurrent } from './runConcurrent';

/** Average requests per message, each over `messages` messages (exact: counted on the wire). */
export interface RoundTripFigures {
  readonly messages: number;
  /** claim + complete of a new key. */
  readonly fresh: number;
  /** claim of a completed key, store without cache (failed insert + read). */
  readonly duplicate: number;
  /** claim of a completed key the store's completed-key cache holds. */
  readonly duplicateCached: number;
  /** commit of a new key with one local effect (marker + effect in one transaction). */
  readonly transactional: number;
}

const RETENTION_MS = 7 * 86_400_000;

/** Measures the store's requests per message on fresh tables. @throws Error when an outcome is not the expected one. */
export async function measureRoundTrips(tables: BenchTables, messages: number, concurrency: number): Promise<RoundTripFigures> {
  const keys = Array.from({ length: messages }, (_, i) => keyFromMessageId('bench-rt', `msg-${i}`));
  const digestOf = (i: number): string => payloadDigest({ id: i });

  // Fresh, then duplicates of the same keys, on a store without cache.
  const plain = await tables.create('rtplain');
  const store = new TableIdempotencyStore(plain.client, { retentionMs: RETENTION_MS });
  const fresh = await counted(plain.counter, messages, concurrency, async (i) => {
    const outcome = expect(await store.claim(keys[i], digestOf(i)), 'claimed');
    await store.complete(outcome.claim, { ok: i });
  });
  const duplicate = await counted(plain.counter, messages, concurrency, async (i) => {
    expectDuplicate(await store.claim(keys[i], digestOf(i)), false);
  });

  // A store with a cache large enough for every key: completions fill it, duplicates hit it.
  const cachedTable = await tables.create('rtcache');
  const cachedStore = new TableIdempotencyStore(cachedTable.client, { retentionMs: RETENTION_MS, cacheSize: messages });
  await runConcurrent(messages, concurrency, async (i) => {
    await cachedStore.complete(expect(await cachedStore.claim(keys[i], digestOf(i)), 'claimed').claim, { ok: i });
  });
  const duplicateCached = await counted(cachedTable.counter, messages, concurrency, async (i) => {
    expectDuplicate(await cachedStore.claim(keys[i], digestOf(i)), true);
  });

  const txTable = await tables.create('rttx');
  const txStore = new TableIdempotencyStore(txTable.client, { retentionMs: RETENTION_MS });
  const transactional = await counted(txTable.counter, messages, concurrency, async (i) => {
    const outcome = await txStore.commit(keys[i], digestOf(i), { ok: i }, [{ name: 'order', properties: { amount: i } }]);
    if (outcome.kind !== 'committed') throw new Error(`commit of a new key gave ${outcome.kind}`);
  });

  return { messages, fresh, duplicate, duplicateCached, transactional };
}

async function counted(counter: { count: number }, messages: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  const before = counter.count;
  await runConcurrent(messages, concurrency, task);
  return (counter.count - before) / messages;
}

function expect<K extends ClaimOutcome['kind']>(outcome: ClaimOutcome, kind: K): Extract<ClaimOutcome, { kind: K }> {
  if (outcome.kind !== kind) throw new Error(`expected ${kind}, got ${outcome.kind}`);
  return outcome as Extract<ClaimOutcome, { kind: K }>;
}

function expectDuplicate(outcome: ClaimOutcome, cached: boolean): void {
  if (outcome.kind !== 'duplicate' || outcome.cached !== cached) {
    throw new Error(`expected a ${cached ? 'cached' : 'stored'} duplicate, got ${outcome.kind}${'cached' in outcome ? ` (cached: ${outcome.cached})` : ''}`);
  }
}
