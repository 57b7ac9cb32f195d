import { TableClient } from '@azure/data-tables';
import {
  CosmosIdempotencyStore,
  InMemoryIdempotencyStore,
  keyFromMessageId,
  makeIdempotent,
  payloadDigest,
  StoreUnavailableError,
  TableIdempotencyStore,
  type Claim,
  type ClaimOutcome,
  type IdempotencyRecord,
  type IdempotencyStore,
  type LocalEffect,
} from 'azure-functions-idempotency/internal';
import { TTL_MARGIN_SECONDS } from 'azure-functions-idempotency/internal';
import { ExpirySweeper } from 'azure-functions-idempotency/table';
import { mulberry32 } from '../../tools/fakeProvider/FakePaymentProvider';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator, cosmosClientFor } from '../support/cosmos';
import { cosmosClientWithFaults } from '../support/cosmosFaults';
import { localRowsInContainer } from '../support/cosmosRows';
import { localRowsInTable } from '../support/localRows';
import { installFaults, type FaultSwitch, type NetworkFault } from '../support/storeFaults';
import { FakeClock, freshTable } from '../support/tables';

/**
 * Differential model-based test: the in-memory store and a durable store (the Table store on real Azurite;
 * the Cosmos store on the Cosmos emulator, the same sequences) run side by
 * side on the same seeded random sequences (claims and commits with local rows, completions, releases,
 * renewals with current and stale claims, makeIdempotent, invalid inputs, reads, clock jumps, sweeps),
 * on one clock. After every step their outcomes and their whole state (every record and its local rows)
 * must agree; the first divergence fails the test with the seed, the step and the last steps.
 *
 * The Table store's network meets faults the in-memory store cannot have (test/support/storeFaults.ts):
 * - delayed answers and lost answers (the SDK retries): the outcome must be the same as in memory;
 * - refused requests: a retryable error that says nothing was decided (`writeMayHaveLanded: false`), and
 *   nothing changed (the in-memory store does not run the step);
 * - hanging writes (no answer by the deadline): a retryable error; the held write is then dropped or
 *   landed late. If it lands (2xx) the in-memory store runs the same step, and the error must have said
 *   `writeMayHaveLanded: true`. A claim that landed that way is remembered by the Table store, whose next
 *   claim of the key takes it over at once (DESIGN: records and leases); the in-memory store is given the
 *   same start by releasing its copy of that claim first, the one documented difference.
 *
 * On Cosmos the faults come from a request plugin (test/support/cosmosFaults.ts) with the same meanings; the
 * sweep step is the service's TTL, modelled (the emulator does not enforce TTL): a marker whose written `ttl`
 * (less the clock-skew margin) has run out by the test's clock is deleted with its rows. That the rows always
 * carry their marker's TTL is checked after every step.
 *
 * Bounded: `DIFF_RUNS` sequences of `DIFF_STEPS` steps, no new sequence after `DIFF_TIME_BOUND_MS`.
 * Reproduce: DIFF_SEED=<seed> DIFF_RUNS=1 npx jest test/integration/storeDifferential.test.ts
 */
const BASE_SEED = Number(process.env.DIFF_SEED ?? 20261201);
const RUNS = Number(process.env.DIFF_RUNS ?? 8);
const STEPS = Number(process.env.DIFF_STEPS ?? 50);
const TIME_BOUND_MS = Number(process.env.DIFF_TIME_BOUND_MS ?? 60_000);

const LEASE_MS = 60_000;
const RETENTION_MS = 3_600_000;
const MAX_RESULT_BYTES = 2_000;
/** The Table store's call deadline: well above the delayed answers (<= 120 ms), so only hangs pass it. */
const DEADLINE_MS = 1_000;
/** The Cosmos store's: the Cosmos SDK waits 1 s (fixed) before it retries a read whose answer was lost, so 1 s would cut that retry. */
const COSMOS_DEADLINE_MS = 2_500;
const KEYS = ['k0', 'k1', 'k2'];
const ROW_NAMES = ['a', 'b', 'c'];
const CONSUMER = 'diff';

const azuriteOf = useAzurite();
let cosmos: CosmosEmulator | undefined;
afterAll(async () => {
  await cosmos?.stop();
});

/** The durable store under test, how to look at its rows, and its expiry (the Table sweep, or Cosmos TTL modelled). */
interface Backend {
  readonly store: IdempotencyStore;
  readonly faults: FaultSwitch;
  rowsOf(key: string): Promise<Map<string, Record<string, unknown>>>;
  /** Deletes what has expired by the test's clock; returns the number of records deleted. */
  expire(): Promise<number>;
  /** Checks what must hold of the backing after every step (a message when it does not). */
  invariant(): Promise<string | undefined>;
  dispose(): void;
}

async function tableBackend(clock: FakeClock, options: object, cacheSize: number): Promise<Backend> {
  const client = await freshTable(azuriteOf(), 'd');
  const inspect = TableClient.fromConnectionString(azuriteOf().connectionString, client.tableName, { allowInsecureConnection: true });
  const faults = installFaults(client);
  const store = new TableIdempotencyStore(client, { ...options, retentionMs: RETENTION_MS, cacheSize, callTimeoutMs: DEADLINE_MS });
  const sweeper = new ExpirySweeper(inspect, { budgetMs: 600_000, clock, partitionCount: 16 });
  return {
    store,
    faults,
    rowsOf: (key) => localRowsInTable(inspect, store.addressOf(keyOf(key))),
    expire: async () => (await sweeper.sweep()).deleted,
    invariant: async () => undefined,
    dispose: () => undefined,
  };
}

async function cosmosBackend(clock: FakeClock, options: object, cacheSize: number): Promise<Backend> {
  cosmos ??= await CosmosEmulator.start();
  const container = await cosmos.freshIdempotencyContainer();
  const { client, faults } = cosmosClientWithFaults(cosmos.endpoint);
  const store = new CosmosIdempotencyStore(client.database(container.database.id).container(container.id), {
    ...options,
    retentionMs: RETENTION_MS,
    cacheSize,
    callTimeoutMs: COSMOS_DEADLINE_MS,
  });
  const inspect = cosmosClientFor(cosmos.endpoint).database(container.database.id).container(container.id);
  const all = async () => (await inspect.items.readAll<Record<string, unknown>>().fetchAll()).resources;
  return {
    store,
    faults,
    rowsOf: (key) => localRowsInContainer(inspect, store.recordIdOf(keyOf(key))),
    expire: async () => {
      let deleted = 0;
      for (const doc of await all()) {
        if (doc.id !== doc.recordId) continue;
        // The service deletes a document `ttl` s after its last write (`updatedAtMs` on this clock); less the skew margin.
        if (Number(doc.updatedAtMs) + (Number(doc.ttl) - TTL_MARGIN_SECONDS) * 1000 > clock.now) continue;
        const recordId = String(doc.recordId);
        for (const row of await all()) if (row.recordId === recordId) await inspect.item(String(row.id), recordId).delete();
        deleted++;
      }
      return deleted;
    },
    invariant: async () => {
      const docs = await all();
      for (const row of docs) {
        if (row.id === row.recordId) continue;
        const marker = docs.find((doc) => doc.id === row.recordId);
        if (!marker) return `row ${String(row.id)} outlives its marker`;
        if (!(marker.localRows as string[]).includes(String(row.kind))) return `row ${String(row.id)} is not listed on its marker`;
        if (row.ttl !== marker.ttl || Number(row._ts) < Number(marker._ts))
          return `row ${String(row.id)} does not carry its marker's TTL (${String(row.ttl)} vs ${String(marker.ttl)})`;
      }
      return undefined;
    },
    dispose: () => client.dispose(),
  };
}
const keyOf = (key: string) => keyFromMessageId(CONSUMER, key);
const digestOf = (d: string): string => payloadDigest({ d });

class Divergence extends Error {}

/** A claim held on both stores (the same claim, as each store issued it). */
interface Pair {
  readonly key: string;
  table: Claim;
  memory: Claim;
}

type Got<T> = { value?: T; error?: unknown };

/** What a record is, store-independently (owner ids and ETags are each store's own). */
function recordView(record: IdempotencyRecord | undefined): unknown {
  if (!record) return undefined;
  const { status, digest, attempt, leaseExpiresAtMs, retentionExpiresAtMs, createdAtMs, updatedAtMs, result, lastError, recordId } = record;
  return {
    recordId,
    status,
    digest,
    attempt,
    leaseExpiresAtMs,
    retentionExpiresAtMs,
    createdAtMs,
    updatedAtMs,
    result,
    lastError,
    rows: [...record.localRows].sort(),
  };
}

function claimView(claim: Claim): unknown {
  const { attempt, leaseExpiresAtMs, createdAtMs, digest, recordId } = claim;
  return { attempt, leaseExpiresAtMs, createdAtMs, digest, recordId, rows: [...claim.localRows].sort() };
}

/** An outcome, store-independently: kinds, claims and records; errors by class (and retryable). */
function view(got: Got<unknown>): string {
  if (got.error !== undefined) {
    const error = got.error as Error & { retryable?: boolean };
    return JSON.stringify({ error: error?.constructor?.name ?? typeof error, retryable: error?.retryable });
  }
  const value = got.value as Record<string, unknown> | undefined;
  if (value === undefined || value === null || typeof value !== 'object') return JSON.stringify({ value });
  if ('kind' in value) {
    const { kind, claim, record, previousStatus, previousAttempt, takeover } = value;
    return JSON.stringify({
      kind,
      claim: claim && claimView(claim as Claim),
      record: record && recordView(record as IdempotencyRecord),
      previousStatus,
      previousAttempt,
      takeover,
    });
  }
  if ('recordId' in value && 'status' in value) return JSON.stringify(recordView(value as unknown as IdempotencyRecord));
  if ('etag' in value && 'attempt' in value) return JSON.stringify(claimView(value as unknown as Claim));
  return JSON.stringify({ value });
}

async function settle<T>(action: () => Promise<T>): Promise<Got<T>> {
  try {
    return { value: await action() };
  } catch (error) {
    return { error };
  }
}

function show(got: Got<unknown>): string {
  if (got.error instanceof Error) return `${got.error.name}: ${got.error.message.split('\n')[0].slice(0, 200)}`;
  return view(got).slice(0, 300);
}

/** What a run exercised (so a run that met no fault cannot pass unnoticed). */
interface Stats {
  steps: number;
  faults: Record<string, number>;
  landed: number;
  dropped: number;
  /** Steps where the Table store took over a claim of its own that had landed unseen. */
  aligned: number;
}

async function runSequence(seed: number, steps: number, stats: Stats, makeBackend: typeof tableBackend): Promise<void> {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const chance = (p: number): boolean => random() < p;

  const clock = new FakeClock(1_800_000_000_000);
  const cacheSize = chance(0.5) ? 50 : 0;
  const options = { leaseMs: LEASE_MS, retentionMs: RETENTION_MS, maxResultBytes: MAX_RESULT_BYTES, clock };
  const backend = await makeBackend(clock, options, cacheSize);
  // `table` is the durable store under test (the Table store or the Cosmos store).
  const { store: table, faults } = backend;
  const memory = new InMemoryIdempotencyStore(options);
  const pairs: Pair[] = [];
  /** Keys whose claim landed after its caller gave up: the owner id the Table store remembers. */
  const unresolved = new Map<string, string>();
  const trace: string[] = [`seed ${seed}, cache ${cacheSize}`];

  const diverge = (step: number, message: string): never => {
    throw new Divergence(`first divergence (seed ${seed}, step ${step}): ${message}\n  last steps:\n    ${trace.slice(-12).join('\n    ')}`);
  };
  const same = (step: number, what: string, tableGot: Got<unknown>, memoryGot: Got<unknown>): void => {
    if (view(tableGot) !== view(memoryGot)) diverge(step, `${what}\n    table:  ${show(tableGot)}\n    memory: ${show(memoryGot)}`);
  };
  const effectsOf = (rows: ReadonlyMap<string, number | null>): LocalEffect[] => [...rows].map(([name, v]) => ({ name, properties: { v, n: null } }));
  const randomRows = (): Map<string, number> => {
    const rows = new Map<string, number>();
    for (const name of ROW_NAMES) if (chance(0.35)) rows.set(name, Math.floor(random() * 1000));
    return rows;
  };
  const faultFor = (write: boolean): NetworkFault => {
    const r = random();
    if (r < 0.08) return 'loseNext';
    if (r < 0.15) return 'delay';
    if (r < 0.2) return 'refuse';
    if (r < 0.26 && write) return 'hang';
    return 'none';
  };
  /** Runs `action` on the Table store under `fault`. */
  const underFault = async <T>(fault: NetworkFault, action: () => Promise<T>): Promise<Got<T>> => {
    faults.mode = fault;
    faults.delayMs = 20 + Math.floor(random() * 100);
    faults.touched = 0;
    faults.held = undefined;
    try {
      return await settle(action);
    } finally {
      faults.mode = 'none';
    }
  };
  const claimFromTable = async (key: string): Promise<Claim> => {
    const record = (await table.get(keyOf(key)))!;
    const { recordId, digest, attempt, ownerId, leaseExpiresAtMs, createdAtMs, localRows, etag } = record;
    return { key: keyOf(key), recordId, digest, attempt, ownerId, leaseExpiresAtMs, createdAtMs, localRows, etag };
  };
  /**
   * Before an acquiring step: where the Table store will take over a claim of its own that landed unseen,
   * give the in-memory store the same start (release its copy of that claim). @returns true if it did.
   */
  const alignUnresolved = async (key: string, digest: string): Promise<boolean> => {
    const owner = unresolved.get(key);
    if (owner === undefined) return false;
    const record = await table.get(keyOf(key));
    if (!record || record.ownerId !== owner || record.status !== 'IN_PROGRESS' || record.leaseExpiresAtMs <= clock.now || record.digest !== digest) {
      return false;
    }
    const pair = pairs.find((p) => p.key === key && p.table.ownerId === owner);
    if (!pair) return false;
    await memory.release(pair.memory, 'aligned: the Table store takes its unresolved claim over');
    stats.aligned++;
    return true;
  };
  /** The in-memory outcome as the Table store reports it after an aligned takeover. */
  const asAligned = <T>(got: Got<T>, aligned: boolean): Got<T> => {
    if (!aligned || !got.value || typeof got.value !== 'object' || !('previousStatus' in got.value)) return got;
    return { value: { ...got.value, previousStatus: 'IN_PROGRESS' } };
  };
  const afterAcquire = (key: string, got: Got<unknown>): void => {
    const kind = (got.value as { kind?: string } | undefined)?.kind;
    if (kind === 'claimed' || kind === 'reclaimed' || kind === 'committed') unresolved.delete(key);
  };
  /**
   * A Table step failed under a fault: check what the error says, settle a held write, and run the
   * step in memory if (and only if) the Table store's write landed.
   */
  const afterFault = async (step: number, fault: NetworkFault, what: string, got: Got<unknown>, mirror: () => Promise<Got<unknown>>): Promise<Got<unknown>> => {
    if (!(got.error instanceof StoreUnavailableError)) {
      // A store that read the record back after the lost answer (Cosmos) may know the outcome: then it must be
      // the in-memory store's, and a held write must be one that can never land (its condition no longer holds).
      const held = faults.held;
      faults.held = undefined;
      const mirrored = await mirror();
      if (view(got) !== view(mirrored)) diverge(step, `${what} under ${fault}: decided ${show(got)}, memory ${show(mirrored)}`);
      const status = held ? await held.land() : 0;
      if (held) trace.push(`${step}:   held ${held.method} landed ${status} after a decided answer`);
      if (status >= 200 && status < 300) diverge(step, `${what}: answered ${show(got)}, but its held write then landed (${status})`);
      return got;
    }
    const error = got.error;
    if (fault === 'refuse' && error.writeMayHaveLanded) diverge(step, `${what}: a refused request decided nothing, but the error says it may have landed`);
    const held = faults.held;
    faults.held = undefined;
    if (!held) return { error };
    const status = chance(0.5) ? await held.land() : (held.drop(), 0);
    trace.push(`${step}:   held ${held.method} ${status === 0 ? 'dropped' : `landed ${status}`}`);
    if (status === 0) stats.dropped++;
    else stats.landed++;
    if (status < 200 || status >= 300) return { error };
    if (!error.writeMayHaveLanded) diverge(step, `${what}: the error said nothing was decided, but the held write landed (${status})`);
    const mirrored = await mirror();
    if (mirrored.error !== undefined) diverge(step, `${what}: landed on the table, but failed in memory: ${show(mirrored)}`);
    return mirrored;
  };

  for (let step = 0; step < steps; step++) {
    const now = clock.now;
    const r = random();
    const traceStart = trace.length;
    if (r < 0.2) {
      const key = pick(KEYS);
      const d = chance(0.8) ? 'A' : 'B';
      const rows = chance(0.7) ? randomRows() : new Map<string, number>();
      const readFirst = chance(0.25);
      const aligned = await alignUnresolved(key, digestOf(d));
      const fault = aligned ? 'none' : faultFor(true); // the aligned step is the documented difference: no fault on top
      trace.push(`${step}: claim ${key} ${d} rows=[${[...rows.keys()]}] readFirst=${readFirst} fault=${fault} aligned=${aligned} t=${now}`);
      const run = (store: IdempotencyStore) => store.claim(keyOf(key), digestOf(d), { effects: effectsOf(rows), readFirst });
      const t = await underFault(fault, () => run(table));
      if (faults.touched > 0 && t.error !== undefined && fault !== 'delay' && fault !== 'loseNext') {
        const m = await afterFault(step, fault, 'claim', t, () => settle(() => run(memory)));
        const kind = (m.value as ClaimOutcome | undefined)?.kind;
        if (kind === 'claimed' || kind === 'reclaimed') {
          const tableClaim = await claimFromTable(key);
          pairs.push({ key, table: tableClaim, memory: (m.value as Extract<ClaimOutcome, { claim: Claim }>).claim });
          unresolved.set(key, tableClaim.ownerId);
        }
      } else {
        const m = asAligned(await settle(() => run(memory)), aligned);
        same(step, 'claim', t, m);
        afterAcquire(key, t);
        const tv = t.value;
        const mv = m.value;
        if (tv && mv && 'claim' in tv && 'claim' in mv) pairs.push({ key, table: tv.claim, memory: mv.claim });
      }
    } else if (r < 0.28) {
      const key = pick(KEYS);
      const d = chance(0.8) ? 'A' : 'B';
      const rows = randomRows();
      const result = { committed: step };
      const aligned = await alignUnresolved(key, digestOf(d));
      const fault = aligned ? 'none' : faultFor(true);
      trace.push(`${step}: commit ${key} ${d} rows=[${[...rows.keys()]}] fault=${fault} aligned=${aligned} t=${now}`);
      const run = (store: IdempotencyStore) => store.commit(keyOf(key), digestOf(d), result, effectsOf(rows));
      const t = await underFault(fault, () => run(table));
      if (faults.touched > 0 && t.error !== undefined && fault !== 'delay' && fault !== 'loseNext') {
        await afterFault(step, fault, 'commit', t, () => settle(() => run(memory)));
      } else {
        same(step, 'commit', t, asAligned(await settle(() => run(memory)), aligned));
        afterAcquire(key, t);
      }
    } else if (r < 0.5 && pairs.length > 0) {
      const pair = pick(pairs);
      const op = pick(['complete', 'complete', 'release', 'renew'] as const);
      const rows = op === 'complete' && chance(0.5) ? randomRows() : new Map<string, number>();
      const result = chance(0.7) ? { completed: pair.key, by: pair.memory.attempt } : { completed: step };
      const fault = faultFor(true);
      trace.push(`${step}: ${op} ${pair.key} attempt=${pair.memory.attempt} rows=[${[...rows.keys()]}] fault=${fault} t=${now}`);
      const run = (store: IdempotencyStore, claim: Claim): Promise<unknown> =>
        op === 'complete' ? store.complete(claim, result, effectsOf(rows)) : op === 'release' ? store.release(claim, 'diff release') : store.renewLease(claim);
      const t = await underFault(fault, () => run(table, pair.table));
      if (faults.touched > 0 && t.error !== undefined && fault !== 'delay' && fault !== 'loseNext') {
        await afterFault(step, fault, op, t, () => settle(() => run(memory, pair.memory)));
      } else {
        const m = await settle(() => run(memory, pair.memory));
        same(step, op, t, m);
        if (op === 'renew' && t.value && m.value && chance(0.6)) {
          pair.table = t.value as Claim;
          pair.memory = m.value as Claim;
        }
      }
    } else if (r < 0.6) {
      const key = pick(KEYS);
      const d = chance(0.8) ? 'A' : 'B';
      const behaviour = pick(['ok', 'ok', 'throws', 'tooBig', 'unstorable'] as const);
      trace.push(`${step}: makeIdempotent ${key} ${d} work=${behaviour} t=${now}`);
      const aligned = await alignUnresolved(key, digestOf(d));
      const value = behaviour === 'tooBig' ? 'x'.repeat(MAX_RESULT_BYTES + 1) : behaviour === 'unstorable' ? { total: NaN, seen: new Set([1]) } : { ran: step };
      const wrap = (store: IdempotencyStore) =>
        makeIdempotent(
          async (_input: { key: string; d: string }) => {
            if (behaviour === 'throws') throw new Error('work failed');
            return value;
          },
          { store, keyOf: (input) => keyOf(input.key), payloadOf: (input) => ({ d: input.d }), heartbeat: false, clock },
        );
      const t = await settle(() => wrap(table)({ key, d }));
      const m = await settle(() => wrap(memory)({ key, d }));
      same(step, 'makeIdempotent', t, m);
      if (t.value !== undefined || aligned) unresolved.delete(key);
    } else if (r < 0.66) {
      const key = pick(KEYS);
      const bad = pick(['nan', 'map', 'function', 'tooBig', 'effects', 'lease'] as const);
      trace.push(`${step}: invalid input ${bad} on ${key} t=${now}`);
      const result =
        bad === 'nan' ? [NaN] : bad === 'map' ? new Map() : bad === 'function' ? { f: () => 1 } : bad === 'tooBig' ? 'x'.repeat(MAX_RESULT_BYTES + 1) : 'ok';
      const effects = bad === 'effects' ? [{ name: 'bad name', properties: {} }] : [];
      const leaseMs = bad === 'lease' ? 0 : undefined;
      const pair = pairs.find((p) => p.key === key);
      // Each call is refused before it writes, so the state must not change (compared after the step).
      const run = async (store: IdempotencyStore, claim: Claim | undefined) => {
        const outcomes: Array<Got<unknown>> = [];
        if (bad === 'lease' || bad === 'effects')
          outcomes.push(await settle(() => store.claim(keyOf(key), digestOf('A'), { effects, leaseMs: leaseMs ?? LEASE_MS })));
        if (bad !== 'lease') outcomes.push(await settle(() => store.commit(keyOf(key), digestOf('A'), result, effects)));
        if (claim && bad !== 'lease') outcomes.push(await settle(() => store.complete(claim, result, effects)));
        return outcomes.map((got) => view(got)).join(' | ');
      };
      const t = await run(table, pair?.table);
      const m = await run(memory, pair?.memory);
      if (t !== m) diverge(step, `invalid input ${bad}\n    table:  ${t}\n    memory: ${m}`);
      if (t.split(' | ').some((outcome) => !outcome.includes('"error"'))) diverge(step, `invalid input ${bad} was accepted: ${t}`);
    } else if (r < 0.72) {
      trace.push(`${step}: get all t=${now}`);
      for (const key of KEYS) same(step, `get ${key}`, await settle(() => table.get(keyOf(key))), await settle(() => memory.get(keyOf(key))));
    } else if (r < 0.88) {
      const jump = pick(['small', 'halfLease', 'pastLease', 'pastRetention'] as const);
      const by = { small: 1_000, halfLease: LEASE_MS / 2, pastLease: LEASE_MS + 1, pastRetention: RETENTION_MS + 1 }[jump];
      clock.advance(by);
      trace.push(`${step}: clock ${jump} -> t=${clock.now}`);
      continue;
    } else {
      trace.push(`${step}: sweep t=${now}`);
      const swept = await backend.expire();
      const deleted = memory.deleteExpired();
      if (swept !== deleted) diverge(step, `sweep: table deleted ${swept}, memory ${deleted}`);
    }
    const fault = /fault=(\S+)/.exec(trace[traceStart] ?? '')?.[1];
    if (fault && fault !== 'none') stats.faults[fault] = (stats.faults[fault] ?? 0) + 1;
    stats.steps++;
    await compareState(step);
    const broken = await backend.invariant();
    if (broken) diverge(step, broken);
  }
  backend.dispose();

  /** Every record of both stores, and exactly their local rows. */
  async function compareState(step: number): Promise<void> {
    for (const key of KEYS) {
      const t = await table.get(keyOf(key));
      const m = await memory.get(keyOf(key));
      if (JSON.stringify(recordView(t)) !== JSON.stringify(recordView(m))) {
        diverge(step, `state of ${key}\n    table:  ${JSON.stringify(recordView(t))}\n    memory: ${JSON.stringify(recordView(m))}`);
      }
      const tableRows = await backend.rowsOf(key);
      const memoryRows = new Map([...memory.localRowsOf(keyOf(key))].map(([name, properties]) => [name, { ...properties }]));
      const sorted = (rows: Map<string, unknown>) => JSON.stringify([...rows].sort(([a], [b]) => a.localeCompare(b)));
      if (sorted(tableRows) !== sorted(memoryRows)) diverge(step, `local rows of ${key}\n    table:  ${sorted(tableRows)}\n    memory: ${sorted(memoryRows)}`);
    }
  }
}

describe.each([
  ['the Table store (Azurite)', tableBackend],
  ['the Cosmos store (Cosmos emulator)', cosmosBackend],
])('differential: the in-memory store and %s agree on the same random sequences', (_name, makeBackend) => {
  test('claims, commits, completions, releases, renewals, makeIdempotent, bad inputs, clock jumps and sweeps, with delayed, lost, refused and hanging answers', async () => {
    const started = Date.now();
    const seeds: number[] = [];
    const stats: Stats = { steps: 0, faults: {}, landed: 0, dropped: 0, aligned: 0 };
    for (let run = 0; run < RUNS && (run === 0 || Date.now() - started < TIME_BOUND_MS); run++) {
      seeds.push(BASE_SEED + run);
      await runSequence(BASE_SEED + run, STEPS, stats, makeBackend);
    }
    console.log(
      `differential: ${seeds.length} sequences (seeds ${seeds.join(', ')}), ${stats.steps} compared steps, faults ${JSON.stringify(stats.faults)}, ` +
        `held writes landed late ${stats.landed}, dropped ${stats.dropped}, unseen claims taken over ${stats.aligned}, ${Date.now() - started} ms`,
    );
    // The run is not vacuous: every kind of fault happened, and held writes both landed and were dropped.
    if (RUNS * STEPS >= 200) {
      for (const fault of ['delay', 'loseNext', 'refuse', 'hang']) expect(stats.faults[fault] ?? 0).toBeGreaterThan(0);
      expect(stats.landed).toBeGreaterThan(0);
      expect(stats.dropped).toBeGreaterThan(0);
    }
  }, 240_000);
});
