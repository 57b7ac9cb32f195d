import { randomUUID } from 'node:crypto';
import type { TableClient, TableEntity } from '@azure/data-tables';
import type { BenchTables, CountedTable } from './BenchTables';
import type { CoreUnderTest } from './coreUnderTest';
import { runConcurrent } from './runConcurrent';
import { settleHeap } from './settleHeap';
import { median, round } from './stats';

/**
 * The wrapper's own cost (issue 64): client CPU per message through `makeIdempotent` (a handler that does nothing)
 * against the same SDK requests made raw on the same Azurite, in the same round:
 *
 * | path | wrapped | raw |
 * |---|---|---|
 * | fresh | claim + complete (2 requests) | `createEntity` of a marker-sized row + a conditional `Merge` of its changed properties |
 * | duplicate (no cache) | failed insert + read (2) | `createEntity` answered 409 + `getEntity` |
 * | cached duplicate | the store's completed-key cache (0) | nothing (the wrapper's cost alone) |
 *
 * Overhead = wrapped - raw, per round (paired), in microseconds per message; the median and range over the measured
 * rounds are reported. Each build of the core (`--core-before`) runs in every round, in an order that alternates.
 */

/** The paths measured. */
export const OVERHEAD_PATHS = ['fresh', 'duplicate', 'cached'] as const;
export type OverheadPath = (typeof OVERHEAD_PATHS)[number];

/** One path's figures for one build, medians over the measured rounds (microseconds of client CPU per message). */
export interface PathOverhead {
  readonly wrappedUs: number;
  readonly rawUs: number;
  /** Median of (wrapped - raw) per round. */
  readonly overheadUs: number;
  readonly overheadRangeUs: readonly [number, number];
  /** Median of wrapped / raw per round (undefined for the cached path: nothing raw to compare). */
  readonly ratio: number | undefined;
  /** Requests per message through the wrapper (counted on the wire): 2, 2, 0. */
  readonly roundTrips: number;
}

/** The overhead section of one build. */
export interface CoreOverhead {
  readonly label: string;
  readonly paths: Record<OverheadPath, PathOverhead>;
  /** Per measured round: wrapped and raw µs per message of each path. */
  readonly rounds: readonly Record<OverheadPath, { wrappedUs: number; rawUs: number }>[];
}

export interface OverheadFigures {
  readonly messages: number;
  readonly concurrency: number;
  readonly rounds: number;
  readonly cores: readonly CoreOverhead[];
  /** With two builds: this build's fresh-path wrapped CPU / the other's, median over paired rounds. */
  readonly freshCpuRatioVsBefore: number | undefined;
}

const RETENTION_MS = 7 * 86_400_000;
/** The target of issue 64: at most this much client CPU over the two raw writes, per fresh message. */
export const FRESH_OVERHEAD_TARGET_US = 150;

interface Message {
  readonly id: string;
  readonly amount: number;
}

/** Measures every build in `cores` for `rounds` rounds after one warm-up round. */
export async function measureOverhead(
  tables: BenchTables,
  cores: readonly CoreUnderTest[],
  options: { messages: number; concurrency: number; rounds: number; log: (line: string) => void },
): Promise<OverheadFigures> {
  const { messages, concurrency, rounds, log } = options;
  const perCore = new Map<string, Record<OverheadPath, { wrappedUs: number; rawUs: number; roundTrips: number }>[]>();
  for (let r = 0; r <= rounds; r++) {
    const order = r % 2 === 0 ? cores : [...cores].reverse();
    for (const core of order) {
      const figures = await measureRound(tables, core, `${core.label}${r}`, messages, concurrency, r % 2 === 0);
      if (r > 0) perCore.set(core.label, [...(perCore.get(core.label) ?? []), figures]);
      log(
        `  overhead round ${r === 0 ? '0 (warm-up)' : r} [${core.label}]: ` +
          OVERHEAD_PATHS.map((p) => `${p} ${Math.round(figures[p].wrappedUs)} us (raw ${Math.round(figures[p].rawUs)})`).join(', '),
      );
    }
  }
  const summaries = cores.map((core): CoreOverhead => {
    const runs = perCore.get(core.label) ?? [];
    const paths = Object.fromEntries(
      OVERHEAD_PATHS.map((p) => [
        p,
        summarize(
          runs.map((run) => run[p]),
          p !== 'cached',
        ),
      ]),
    ) as Record<OverheadPath, PathOverhead>;
    return {
      label: core.label,
      paths,
      rounds: runs.map(
        (run) =>
          Object.fromEntries(OVERHEAD_PATHS.map((p) => [p, { wrappedUs: round(run[p].wrappedUs, 1), rawUs: round(run[p].rawUs, 1) }])) as Record<
            OverheadPath,
            { wrappedUs: number; rawUs: number }
          >,
      ),
    };
  });
  const [mine, before] = [perCore.get('this'), perCore.get('before')];
  const freshCpuRatioVsBefore = mine && before ? round(median(mine.map((run, i) => run.fresh.wrappedUs / before[i].fresh.wrappedUs)), 3) : undefined;
  return { messages, concurrency, rounds, cores: summaries, freshCpuRatioVsBefore };
}

function summarize(runs: readonly { wrappedUs: number; rawUs: number; roundTrips: number }[], hasRaw: boolean): PathOverhead {
  const overheads = runs.map((run) => run.wrappedUs - run.rawUs);
  return {
    wrappedUs: round(median(runs.map((run) => run.wrappedUs)), 1),
    rawUs: round(median(runs.map((run) => run.rawUs)), 1),
    overheadUs: round(median(overheads), 1),
    overheadRangeUs: [round(Math.min(...overheads), 1), round(Math.max(...overheads), 1)],
    ratio: hasRaw ? round(median(runs.map((run) => run.wrappedUs / run.rawUs)), 3) : undefined,
    roundTrips: median(runs.map((run) => run.roundTrips)),
  };
}

/**
 * One round of one build: raw and wrapped runs of each path on fresh tables (raw first in even rounds, wrapped first
 * in odd ones). @throws Error when the wrapper did not make the requests expected of the path (2, 2, 0).
 */
async function measureRound(
  tables: BenchTables,
  core: CoreUnderTest,
  prefix: string,
  messages: number,
  concurrency: number,
  rawFirst: boolean,
): Promise<Record<OverheadPath, { wrappedUs: number; rawUs: number; roundTrips: number }>> {
  const batch = Array.from({ length: messages }, (_, i): Message => ({ id: `${prefix}-${i}`, amount: 100 + (i % 900) }));
  const rawTable = await tables.create('ohraw');
  const wrappedTable = await tables.create('ohwrap');
  const keyOf = (msg: Message) => core.keyFromMessageId('bench-overhead', msg.id);
  // A cache big enough for every key (the cached path); the duplicate path uses a store without one.
  const cachingStore = new core.TableIdempotencyStore(wrappedTable.client, { retentionMs: RETENTION_MS, cacheSize: messages });
  const plainStore = new core.TableIdempotencyStore(wrappedTable.client, { retentionMs: RETENTION_MS });
  const handler = async (msg: Message): Promise<{ ok: boolean; amount: number }> => ({ ok: true, amount: msg.amount });
  const wrappedCaching = core.makeIdempotent(handler, { store: cachingStore, keyOf });
  const wrappedPlain = core.makeIdempotent(handler, { store: plainStore, keyOf });
  const expectRequests = (table: CountedTable, path: OverheadPath, expected: number, run: () => Promise<number>) => async () => {
    const before = table.counter.count;
    const us = await run();
    const requests = table.counter.count - before;
    if (requests !== expected * BLOCK_SIZE_OF(messages)) {
      throw new Error(`overhead ${path} [${core.label}]: ${requests} requests for ${BLOCK_SIZE_OF(messages)} messages, expected ${expected} each`);
    }
    return { us, requests };
  };
  const block = (from: number, task: (i: number) => Promise<void>) => () => cpuUs(BLOCK_SIZE_OF(messages), concurrency, (i) => task(from + i));
  const fresh = await interleaved(messages, rawFirst, (from) => [
    block(from, (i) => rawFresh(rawTable.client, batch[i], i)),
    expectRequests(
      wrappedTable,
      'fresh',
      2,
      block(from, async (i) => void (await wrappedCaching(batch[i]))),
    ),
  ]);
  const duplicate = await interleaved(messages, rawFirst, (from) => [
    block(from, (i) => rawDuplicate(rawTable.client, batch[i], i)),
    expectRequests(
      wrappedTable,
      'duplicate',
      2,
      block(from, async (i) => void (await wrappedPlain(batch[i]))),
    ),
  ]);
  const cached = await interleaved(messages, rawFirst, (from) => [
    async () => 0, // nothing raw: a cached duplicate makes no request
    expectRequests(
      wrappedTable,
      'cached',
      0,
      block(from, async (i) => void (await wrappedCaching(batch[i]))),
    ),
  ]);
  return { fresh, duplicate, cached };
}

/** Messages per block: raw and wrapped runs alternate in blocks, so load that comes and goes falls on both alike. */
const BLOCK_SIZE_OF = (messages: number): number => Math.min(messages, BLOCK_SIZE);
const BLOCK_SIZE = 100;

/**
 * Runs `messages` messages as alternating blocks of a raw and a wrapped run (which goes first alternates too).
 * @returns the client CPU per message of each, in microseconds.
 */
async function interleaved(
  messages: number,
  rawFirst: boolean,
  blockAt: (from: number) => [raw: () => Promise<number>, wrapped: () => Promise<{ us: number; requests: number }>],
): Promise<{ wrappedUs: number; rawUs: number; roundTrips: number }> {
  const size = BLOCK_SIZE_OF(messages);
  const blocks = Math.floor(messages / size);
  let [rawUs, wrappedUs, requests] = [0, 0, 0];
  const runWrapped = async (wrapped: () => Promise<{ us: number; requests: number }>) => {
    const run = await wrapped();
    wrappedUs += run.us;
    requests += run.requests;
  };
  for (let b = 0; b < blocks; b++) {
    const [raw, wrapped] = blockAt(b * size);
    if ((b % 2 === 0) === rawFirst) {
      rawUs += await raw();
      await runWrapped(wrapped);
    } else {
      await runWrapped(wrapped);
      rawUs += await raw();
    }
  }
  const measured = blocks * size;
  return { wrappedUs: wrappedUs / measured, rawUs: rawUs / measured, roundTrips: requests / measured };
}

/** Client CPU (user + system) of `task` over `messages` messages, in microseconds, started on a settled heap. */
async function cpuUs(messages: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  settleHeap();
  const before = process.cpuUsage();
  await runConcurrent(messages, concurrency, task);
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

/** A row shaped like a claim's marker (same properties, same Int64 times), written raw. */
function rawMarker(msg: Message, i: number): TableEntity {
  const now = Date.now();
  return {
    partitionKey: `p${String(i % 16).padStart(2, '0')}`,
    rowKey: `${msg.id}-${'0'.repeat(40)}`,
    kind: 'marker',
    consumer: 'bench-overhead',
    idempotencyKey: msg.id,
    digest: 'f'.repeat(64),
    status: 'InProgress',
    ownerId: randomUUID(),
    attempt: 1,
    leaseExpiresAtMs: { value: String(now + 300_000), type: 'Int64' },
    retentionExpiresAtMs: { value: String(now + RETENTION_MS), type: 'Int64' },
    createdAtMs: { value: String(now), type: 'Int64' },
    updatedAtMs: { value: String(now), type: 'Int64' },
  };
}

/** The two writes of a fresh message, raw: insert, then a conditional merge of what a completion changes. */
async function rawFresh(client: TableClient, msg: Message, i: number): Promise<void> {
  const row = rawMarker(msg, i);
  const created = await client.createEntity(row);
  const now = Date.now();
  await client.updateEntity(
    {
      partitionKey: row.partitionKey,
      rowKey: row.rowKey,
      status: 'Completed',
      leaseExpiresAtMs: { value: '0', type: 'Int64' },
      retentionExpiresAtMs: { value: String(now + RETENTION_MS), type: 'Int64' },
      updatedAtMs: { value: String(now), type: 'Int64' },
      resultJson: '{"ok":true}',
    },
    'Merge',
    { etag: created.etag },
  );
}

/** The two requests of a duplicate, raw: the insert the service refuses (409), then the read. */
async function rawDuplicate(client: TableClient, msg: Message, i: number): Promise<void> {
  const row = rawMarker(msg, i);
  try {
    await client.createEntity(row);
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 409) throw error;
  }
  await client.getEntity(row.partitionKey, row.rowKey);
}
