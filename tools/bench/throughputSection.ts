import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { TableClient } from '@azure/data-tables';
import { keyFromMessageId, makeIdempotent, partitionName, payloadDigest, TableIdempotencyStore, type Claim } from 'azure-functions-idempotency/internal';
import type { BenchTables, CountedTable } from './BenchTables';
import { processesBetween, sampleProcesses } from './cpuMeter';
import { runConcurrent } from './runConcurrent';
import { median, percentile } from './stats';

/** One business message of the benchmark. */
interface OrderMessage {
  readonly id: string;
  readonly amount: number;
}

/** The consumers compared, plus the idempotent consumer's steps measured alone. */
export const VARIANTS = ['baseline', 'idempotent', 'transactional', 'claimStep', 'completeStep', 'readStep'] as const;
export type Variant = (typeof VARIANTS)[number];
const STEP_VARIANTS = ['claimStep', 'completeStep', 'readStep'] as const;
type StepVariant = (typeof STEP_VARIANTS)[number];
/** What rotates each round: the three consumers, and the steps as one unit (they depend on each other). */
const UNITS = ['baseline', 'idempotent', 'transactional', 'steps'] as const;

/** One variant's run of `messages` messages. */
export interface VariantRun {
  readonly variant: Variant;
  readonly round: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly roundTripsPerMessage: number;
  readonly clientCpuMsPerMessage: number;
  readonly serverCpuMsPerMessage: number | undefined;
  /** Share of the machine's cores (0..1) busy with other processes during the run; undefined without /proc. */
  readonly otherLoad: number | undefined;
}

export interface VariantSummary {
  /** Median over the measured rounds. */
  readonly perSecond: number;
  readonly roundTripsPerMessage: number;
  readonly clientCpuMsPerMessage: number;
  readonly serverCpuMsPerMessage: number | undefined;
}

export interface ThroughputFigures {
  readonly messages: number;
  readonly concurrency: number;
  readonly rounds: number;
  readonly variants: Record<Variant, VariantSummary>;
  /** Median over rounds of (idempotent rate / baseline rate in the same round). */
  readonly ratioIdempotent: number;
  /** Lowest and highest per-round idempotent ratio (the noise). */
  readonly ratioIdempotentRange: readonly [number, number];
  /** Median over rounds of (transactional rate / baseline rate in the same round). */
  readonly ratioTransactional: number;
  /**
   * Median over rounds of the idempotent ratio predicted from each request's rate alone in the
   * same round: (1/baseline) / (1/claim + 1/baseline + 1/complete).
   */
  readonly predictedRatioFromSteps: number;
  /** Median over rounds of CPU per message (client + Azurite), baseline / idempotent; undefined without /proc. */
  readonly predictedRatioFromCpu: number | undefined;
  /** Per measured round: idempotent ratio and the other processes' load on the machine (0..1). */
  readonly perRound: readonly { readonly ratio: number; readonly otherLoad: number | undefined }[];
  /** Median idempotent ratio over rounds where other processes used < 10% of the machine; undefined if none. */
  readonly ratioIdempotentQuiet: number | undefined;
  /** Fresh claims at `concurrency`, every claim of every measured round, in ms. */
  readonly claimLatencyMs: { readonly p50: number; readonly p99: number; readonly samples: number };
}

const RETENTION_MS = 7 * 86_400_000;
const PARTITIONS = 16;
/** A round is "quiet" when other processes used less than this share of the machine's cores. */
const QUIET_LOAD = 0.1;

/**
 * Runs every variant once per round on fresh tables, in an order that rotates each round (no variant always first on
 * a warmer or noisier machine). Round 0 is a warm-up, not reported.
 */
export async function measureThroughput(
  tables: BenchTables,
  serverPid: number | undefined,
  options: { messages: number; concurrency: number; rounds: number; log: (line: string) => void },
): Promise<ThroughputFigures> {
  const { messages, concurrency, rounds, log } = options;
  const runs: VariantRun[] = [];
  const latencies: number[] = [];
  for (let round = 0; round <= rounds; round++) {
    const measured: VariantRun[] = [];
    for (const unit of rotate(UNITS, round)) {
      if (unit === 'steps') {
        const steps = await stepsFixture(tables, messages);
        for (const step of STEP_VARIANTS) {
          measured.push(await runVariant(step, round, tables, steps, serverPid, messages, concurrency, round > 0 ? latencies : undefined));
        }
      } else {
        measured.push(await runVariant(unit, round, tables, undefined, serverPid, messages, concurrency, undefined));
      }
    }
    if (round > 0) runs.push(...measured);
    const load = measured.map((r) => r.otherLoad ?? 0).reduce((a, b) => Math.max(a, b), 0);
    log(
      `  round ${round === 0 ? '0 (warm-up)' : round}: ${measured.map((r) => `${r.variant} ${Math.round(r.perSecond)}/s`).join(', ')}` +
        ` (other processes: up to ${Math.round(load * 100)}% of the machine)`,
    );
  }
  const byVariant = (v: Variant): VariantRun[] => runs.filter((r) => r.variant === v);
  const variants = Object.fromEntries(VARIANTS.map((v) => [v, summarize(byVariant(v))])) as Record<Variant, VariantSummary>;
  const perRound = (f: (run: (v: Variant) => VariantRun) => number): number[] => Array.from({ length: rounds }, (_, i) => f((v) => byVariant(v)[i]));
  const idemRatios = perRound((r) => r('idempotent').perSecond / r('baseline').perSecond);
  const cpuOf = (run: VariantRun): number | undefined =>
    run.serverCpuMsPerMessage === undefined ? undefined : run.clientCpuMsPerMessage + run.serverCpuMsPerMessage;
  const cpuRatios = perRound((r) => (cpuOf(r('baseline')) ?? Number.NaN) / (cpuOf(r('idempotent')) ?? Number.NaN));
  const loads = perRound((r) => {
    const inRound = VARIANTS.map(r);
    if (inRound.some((run) => run.otherLoad === undefined)) return Number.NaN;
    const seconds = inRound.reduce((sum, run) => sum + run.seconds, 0);
    return inRound.reduce((sum, run) => sum + (run.otherLoad as number) * run.seconds, 0) / seconds;
  });
  const rows = idemRatios.map((ratio, i) => ({ ratio, otherLoad: Number.isNaN(loads[i]) ? undefined : loads[i] }));
  const quiet = rows.filter((row) => row.otherLoad !== undefined && row.otherLoad < QUIET_LOAD).map((row) => row.ratio);
  return {
    perRound: rows,
    ratioIdempotentQuiet: quiet.length ? median(quiet) : undefined,
    messages,
    concurrency,
    rounds,
    variants,
    ratioIdempotent: median(idemRatios),
    ratioIdempotentRange: [Math.min(...idemRatios), Math.max(...idemRatios)],
    ratioTransactional: median(perRound((r) => r('transactional').perSecond / r('baseline').perSecond)),
    predictedRatioFromSteps: median(
      perRound((r) => 1 / r('baseline').perSecond / (1 / r('claimStep').perSecond + 1 / r('baseline').perSecond + 1 / r('completeStep').perSecond)),
    ),
    predictedRatioFromCpu: cpuRatios.some(Number.isNaN) ? undefined : median(cpuRatios),
    claimLatencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), samples: latencies.length },
  };
}

interface StepsFixture {
  readonly table: CountedTable;
  readonly store: TableIdempotencyStore;
  /** Filled by claimStep, completed by completeStep. */
  readonly claims: Claim[];
  readonly messages: OrderMessage[];
}

async function stepsFixture(tables: BenchTables, messages: number): Promise<StepsFixture> {
  const table = await tables.create('bsteps');
  return {
    table,
    store: new TableIdempotencyStore(table.client, { retentionMs: RETENTION_MS }),
    claims: [],
    messages: orders('s', messages),
  };
}

async function runVariant(
  variant: Variant,
  round: number,
  tables: BenchTables,
  steps: StepsFixture | undefined,
  serverPid: number | undefined,
  messages: number,
  concurrency: number,
  latencies: number[] | undefined,
): Promise<VariantRun> {
  const counted: CountedTable[] = [];
  let task: (i: number) => Promise<void>;
  const batch = orders(`${variant}-${round}`, messages);

  if (variant === 'baseline') {
    const business = await tables.create('bbiz');
    counted.push(business);
    task = async (i) => {
      await writeBusinessRow(business.client, batch[i]);
    };
  } else if (variant === 'idempotent') {
    const business = await tables.create('bbiz');
    const marks = await tables.create('bidem');
    counted.push(business, marks);
    const store = new TableIdempotencyStore(marks.client, { retentionMs: RETENTION_MS });
    const handle = makeIdempotent(
      async (msg: OrderMessage) => {
        await writeBusinessRow(business.client, msg);
        return { ok: true };
      },
      { store, keyOf: (msg) => keyFromMessageId('bench', msg.id) },
    );
    task = async (i) => {
      await handle(batch[i]);
    };
  } else if (variant === 'transactional') {
    const marks = await tables.create('btx');
    counted.push(marks);
    const store = new TableIdempotencyStore(marks.client, { retentionMs: RETENTION_MS });
    task = async (i) => {
      const msg = batch[i];
      const outcome = await store.commit(keyFromMessageId('bench', msg.id), payloadDigest(msg), { ok: true }, [
        { name: 'order', properties: { amount: msg.amount, status: 'accepted' } },
      ]);
      if (outcome.kind !== 'committed') throw new Error(`commit of a new key gave ${outcome.kind}`);
    };
  } else {
    if (!steps) throw new Error(`${variant} needs the steps fixture`);
    counted.push(steps.table);
    task = stepTask(variant, steps, latencies);
  }

  const before = counted.reduce((s, t) => s + t.counter.count, 0);
  const pids = { client: 'self', server: serverPid } as const;
  const cpuBefore = sampleProcesses(pids);
  const seconds = await runConcurrent(messages, concurrency, task);
  const { processes, machineMs } = processesBetween(cpuBefore, sampleProcesses(pids));
  const [clientMs, serverMs] = [processes.client!, processes.server];
  const roundTrips = counted.reduce((s, t) => s + t.counter.count, 0) - before;
  return {
    variant,
    round,
    seconds,
    perSecond: messages / seconds,
    roundTripsPerMessage: roundTrips / messages,
    clientCpuMsPerMessage: clientMs / messages,
    serverCpuMsPerMessage: serverMs === undefined ? undefined : serverMs / messages,
    otherLoad:
      machineMs === undefined || serverMs === undefined ? undefined : Math.max(0, machineMs - clientMs - serverMs) / (seconds * 1000 * availableParallelism()),
  };
}

/** The idempotent consumer's requests alone, in their order on one table: fresh claims (timed), completions, reads. */
function stepTask(variant: StepVariant, steps: StepsFixture, latencies: number[] | undefined): (i: number) => Promise<void> {
  const { store, claims, messages } = steps;
  const key = (i: number) => keyFromMessageId('bench', messages[i].id);
  switch (variant) {
    case 'claimStep':
      return async (i) => {
        const started = performance.now();
        const outcome = await store.claim(key(i), payloadDigest(messages[i]));
        const ms = performance.now() - started;
        if (outcome.kind !== 'claimed') throw new Error(`claim of a new key gave ${outcome.kind}`);
        claims[i] = outcome.claim;
        latencies?.push(ms);
      };
    case 'completeStep':
      return async (i) => {
        await store.complete(claims[i], { ok: true });
      };
    case 'readStep':
      return async (i) => {
        const { partitionKey, rowKey } = store.addressOf(key(i));
        await steps.table.client.getEntity(partitionKey, rowKey);
      };
  }
}

function orders(prefix: string, count: number): OrderMessage[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${prefix}-${i}`, amount: 100 + (i % 900) }));
}

/** The business handler: one row in the orders table (one round trip). */
async function writeBusinessRow(client: TableClient, msg: OrderMessage): Promise<void> {
  await client.createEntity({
    partitionKey: partitionName(Number.parseInt(msg.id.slice(-3).replace(/\D/g, '') || '0', 10) % PARTITIONS),
    rowKey: msg.id,
    amount: msg.amount,
    status: 'accepted',
  });
}

function summarize(runs: readonly VariantRun[]): VariantSummary {
  const server = runs.map((r) => r.serverCpuMsPerMessage);
  return {
    perSecond: median(runs.map((r) => r.perSecond)),
    roundTripsPerMessage: median(runs.map((r) => r.roundTripsPerMessage)),
    clientCpuMsPerMessage: median(runs.map((r) => r.clientCpuMsPerMessage)),
    serverCpuMsPerMessage: server.every((s) => s !== undefined) ? median(server) : undefined,
  };
}

function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}
