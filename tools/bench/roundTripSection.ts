import { keyFromMessageId, makeIdempotent, payloadDigest, TableIdempotencyStore, type ClaimOutcome } from 'azure-functions-idempotency/internal';
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
  /** Through `makeIdempotent`, by Service Bus `deliveryCount`: first deliveries insert first, redeliveries read first. */
  readonly byDelivery: {
    /** deliveryCount 1, new key: insert + complete. */
    readonly freshFirstDelivery: number;
    /** deliveryCount 1, completed key (a producer duplicate): failed insert + read. */
    readonly duplicateFirstDelivery: number;
    /** deliveryCount 2, completed key (the ack was lost): read. */
    readonly duplicateRedelivery: number;
    /** deliveryCount 2, key absent (the first delivery died before its claim): read + insert + complete. */
    readonly freshRedelivery: number;
  };
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
    const outcome = expectKind(await store.claim(keys[i], digestOf(i)), 'claimed');
    await store.complete(outcome.claim, { ok: i });
  });
  const duplicate = await counted(plain.counter, messages, concurrency, async (i) => {
    expectDuplicate(await store.claim(keys[i], digestOf(i)), false);
  });

  // A store with a cache large enough for every key: completions fill it, duplicates hit it.
  const cachedTable = await tables.create('rtcache');
  const cachedStore = new TableIdempotencyStore(cachedTable.client, { retentionMs: RETENTION_MS, cacheSize: messages });
  await runConcurrent(messages, concurrency, async (i) => {
    await cachedStore.complete(expectKind(await cachedStore.claim(keys[i], digestOf(i)), 'claimed').claim, { ok: i });
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

  const byDelivery = await measureByDelivery(tables, messages, concurrency);
  return { messages, fresh, duplicate, duplicateCached, transactional, byDelivery };
}

/** The wrapper's round trips by delivery count (what the trigger metadata says), on a store without cache. */
async function measureByDelivery(tables: BenchTables, messages: number, concurrency: number): Promise<RoundTripFigures['byDelivery']> {
  const table = await tables.create('rtdelivery');
  const store = new TableIdempotencyStore(table.client, { retentionMs: RETENTION_MS });
  const handler = makeIdempotent(async (message: { id: number }, _context: { triggerMetadata: Record<string, unknown> }) => ({ ok: message.id }), {
    store,
    consumer: 'bench-delivery',
  });
  const deliver = (id: string, i: number, deliveryCount: number) => handler({ id: i }, { triggerMetadata: { messageId: id, deliveryCount } });
  const freshFirstDelivery = await counted(table.counter, messages, concurrency, (i) => deliver(`first-${i}`, i, 1).then(() => undefined));
  const duplicateFirstDelivery = await counted(table.counter, messages, concurrency, (i) => deliver(`first-${i}`, i, 1).then(() => undefined));
  const duplicateRedelivery = await counted(table.counter, messages, concurrency, (i) => deliver(`first-${i}`, i, 2).then(() => undefined));
  const freshRedelivery = await counted(table.counter, messages, concurrency, (i) => deliver(`re-${i}`, i, 2).then(() => undefined));
  return { freshFirstDelivery, duplicateFirstDelivery, duplicateRedelivery, freshRedelivery };
}

async function counted(counter: { count: number }, messages: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  const before = counter.count;
  await runConcurrent(messages, concurrency, task);
  return (counter.count - before) / messages;
}

/** `outcome`, when it is of `kind`. @throws Error naming both kinds when not. */
export function expectKind<K extends ClaimOutcome['kind']>(outcome: ClaimOutcome, kind: K): Extract<ClaimOutcome, { kind: K }> {
  if (outcome.kind !== kind) throw new Error(`expected ${kind}, got ${outcome.kind}`);
  return outcome as Extract<ClaimOutcome, { kind: K }>;
}

function expectDuplicate(outcome: ClaimOutcome, cached: boolean): void {
  if (outcome.kind !== 'duplicate' || outcome.cached !== cached) {
    throw new Error(`expected a ${cached ? 'cached' : 'stored'} duplicate, got ${outcome.kind}${'cached' in outcome ? ` (cached: ${outcome.cached})` : ''}`);
  }
}
