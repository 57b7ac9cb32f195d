/** The bench's split phase (handoff): the trigger measured alone, paced and in a burst, then one worker's drain. */
import type { CpuMsPerMessage, ProcessStalls } from './designSummary';
import type { StorageCounts } from './StorageTrafficCounter';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { AzuriteTable } from '../azurite/AzuriteTable';
import { StallLog, watchStalls, type Stall } from '../azurite/stallWatch';
import type { Execution } from '../cost/billableTime';
import type { FakePaymentProvider } from '../fakeProvider/FakePaymentProvider';
import type { LocalServiceBus } from '../local/LocalServiceBus';
import type { startRealEnginePayments } from '../local/durable/realEnginePayments';
import type { CountersProcess, RemoteStorageCounter } from './CountersProcess';
import { groupPeakRssMb, processesBetween, sampleProcesses, selfPeakRssMb } from './cpuMeter';
import { percentile, round } from './stats';
import { diffCounts } from './StorageTrafficCounter';

/** How long a run waits for the local bus to settle before it fails with the bus's counts (as long as `drain`'s cap). */
export const BUS_IDLE_CAP_MS = 30 * 60_000;

/** Seconds of paced messages that warm the split phase's new client-role host before the paced phase. */
const WARMUP_SECONDS = 5;

/** The split phase's figures (handoff): the trigger alone, paced and in a burst, then one worker's drain. */
export interface SplitPhase {
  /** Messages of the phase (warm-up + paced + burst). */
  readonly payments: number;
  /** `warmupMs`: 5 s of paced messages before (a new host process), finished before the paced phase, not in its percentiles. */
  readonly paced: {
    readonly ratePerSecond: number;
    readonly warmupMs: number[];
    readonly executionMsP50: number;
    readonly executionMsP99: number;
    readonly durationsMs: number[];
    /** The longest event-loop delay of this process (the trigger's) while paced. */
    readonly eventLoopDelayMaxMs: number;
    /** Requests of the trigger's dependencies answered in 200 ms or more while paced: by kind, the 10 slowest; and how many during the warm-up. */
    readonly slowRequests: {
      readonly count: number;
      readonly byWhat: Record<string, number>;
      readonly slowest: ReadonlyArray<{ what: string; atS: number; ms: number }>;
      readonly duringWarmup: number;
    };
    /** Pauses of 200 ms or more of each process's event loop while paced (s since the paced phase began, ms). */
    readonly stalls: ProcessStalls;
  };
  readonly burst: {
    readonly executionMsP50: number;
    readonly executionMsP99: number;
    readonly acksPerSecond: number;
    readonly durationsMs: number[];
    readonly cpuMsPerMessage: CpuMsPerMessage;
  };
  /** Storage requests per message while only the trigger ran (the burst): the claim and the orchestration's start. */
  readonly triggerStoragePerMessage: Record<string, number>;
  /** One worker host running the queued charges to the end. */
  readonly drain: { readonly seconds: number; readonly paymentsPerSecond: number };
  /** Peak resident memory (MB) after the drain: the worker host's process group (dotnet + its Node worker), this process. */
  readonly memoryPeakMb?: { readonly durableHost?: number; readonly benchProcess?: number };
  /** Provider charges of the phase's payment ids (each exactly once: equal to `payments`). */
  readonly charged: number;
}

export function countBy(names: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/** Counts of several accounts under one map: `app.table.Idempotency.insert`, `durable.queue.control.emptyGet`, ... */
export function merge(accounts: Record<string, StorageCounts>): {
  requests: Record<string, number>;
  billing: Record<string, string>;
  dequeuedMessages: Record<string, number>;
} {
  const out = { requests: {} as Record<string, number>, billing: {} as Record<string, string>, dequeuedMessages: {} as Record<string, number> };
  for (const [account, counts] of Object.entries(accounts)) {
    for (const [key, n] of Object.entries(counts.requests)) {
      out.requests[`${account}.${key}`] = n;
      out.billing[`${account}.${key}`] = counts.billing[key];
    }
    for (const [queue, n] of Object.entries(counts.dequeuedMessages)) out.dequeuedMessages[`${account}.${queue}`] = n;
  }
  return out;
}

/** What the split phase measures with: the run's options, its engine, bus, counters and stores. */
export interface SplitContext {
  /** The run's receivers, provider latency, split payments (`DesignRunOptions`) and log. */
  readonly options: { readonly splitPayments?: number; readonly concurrency: number; readonly providerMs: number; readonly log: (line: string) => void };
  readonly real: Awaited<ReturnType<typeof startRealEnginePayments>>;
  readonly bus: LocalServiceBus;
  readonly counters: CountersProcess;
  readonly azurite: AzuriteTable;
  readonly appCounter: RemoteStorageCounter;
  readonly engine: RemoteStorageCounter;
  readonly provider: FakePaymentProvider;
  /** The consumer's executions so far; the phase's deliveries add theirs. */
  readonly consumerExecutions: Execution[];
}

/** The trigger alone (client-role host), paced then in a burst; then the worker drains: see `DesignRunOptions.splitPayments`. */
export async function splitPhase(context: SplitContext): Promise<SplitPhase> {
  const { options, real, bus, counters, azurite, appCounter, engine, provider, consumerExecutions } = context;
  const { concurrency, providerMs, log } = options;
  const n = options.splitPayments!;
  const engineHost = real.backend.engine;
  log(`bench:durable: split: the Durable host as a client only; ${n} payments paced, then ${n} at once...`);
  await engineHost.switchRole('client');
  const send = (tag: string, i: number) => {
    const paymentId = `bench-split-${tag}-${i}`;
    bus.send('payments', { messageId: paymentId, body: JSON.stringify({ paymentId, customerId: 'c', amount: 1_000 + i, currency: 'EUR' }) });
  };
  const ratePerSecond = round(concurrency / Math.max(0.001, providerMs / 1000), 2);
  /** Sends `count` messages at `ratePerSecond`, then waits until every delivery finished. */
  const pace = async (tag: string, count: number) => {
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      const due = started + (i * 1000) / ratePerSecond;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      send(tag, i);
    }
    await bus.whenIdle(BUS_IDLE_CAP_MS);
  };
  // Warm-up: 5 s of paced messages for the new host process (JIT, connections; its first starts took up to 4 s
  // here), finished before the paced phase starts so that its backlog never spills into it; reported apart.
  const warmup = Math.max(1, Math.ceil(ratePerSecond * WARMUP_SECONDS));
  const warmupFrom = consumerExecutions.length;
  const warmupStartedAtMs = Date.now();
  await pace('warmup', warmup);
  const warmupMs = consumerExecutions.slice(warmupFrom).map((e) => e.durationMs);
  const pacedFrom = consumerExecutions.length;
  // This process's event-loop delay while paced: a slow delivery with a short delay here was slow elsewhere.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const benchStalls = new StallLog();
  const stopWatching = watchStalls(benchStalls);
  const pacedStartedAtMs = Date.now();
  /** Seconds from the paced phase's start to `atMs` (epoch), as the slow answers and the pauses report them. */
  const pacedS = (atMs: number) => round((atMs - pacedStartedAtMs) / 1000, 1);
  await pace('paced', n);
  loopDelay.disable();
  stopWatching();
  // Which dependency answered slowly (a stall of every delivery at once is one of them, or this process).
  const slowAll = await counters.slow(warmupStartedAtMs);
  const slow = slowAll.filter((r) => r.atMs >= pacedStartedAtMs);
  const slowRequests = {
    count: slow.length,
    byWhat: countBy(slow.map((r) => r.what)),
    slowest: slow.slice(0, 10).map((r) => ({ what: r.what, atS: pacedS(r.atMs), ms: r.ms })),
    duringWarmup: slowAll.length - slow.length,
  };
  // Whose event loop paused while paced (a slow answer from a process that paused is that process's pause).
  const pausedAt = (list: readonly Stall[]) => list.map((x) => ({ atS: pacedS(x.atMs), ms: x.ms }));
  const stalls = {
    benchProcess: pausedAt(benchStalls.since(pacedStartedAtMs)),
    counters: pausedAt(await counters.stalls(pacedStartedAtMs)),
    appAzurite: pausedAt(azurite.stalls(pacedStartedAtMs)),
    engineAzurite: pausedAt(real.backend.storage.stalls(pacedStartedAtMs)),
  };
  const paced = consumerExecutions.slice(pacedFrom).map((e) => e.durationMs);
  log(`bench:durable: split: ${n} paced done; ${n} at once...`);
  const burstFrom = consumerExecutions.length;
  const storageBefore = { app: await appCounter.snapshot(), engine: await engine.snapshot() };
  const pids = {
    benchProcess: 'self',
    durableHost: engineHost.pid,
    counters: counters.pid,
    appAzurite: azurite.pid,
    engineAzurite: real.storagePid(),
  } as const;
  const cpuBefore = sampleProcesses(pids);
  const burstStarted = performance.now();
  for (let i = 0; i < n; i++) send('burst', i);
  await bus.whenIdle(BUS_IDLE_CAP_MS);
  const burstSeconds = (performance.now() - burstStarted) / 1000;
  const cpu = processesBetween(cpuBefore, sampleProcesses(pids));
  const triggerStorage = merge({
    app: diffCounts(await appCounter.snapshot(), storageBefore.app),
    durable: diffCounts(await engine.snapshot(), storageBefore.engine),
  });
  const burst = consumerExecutions.slice(burstFrom).map((e) => e.durationMs);
  log(`bench:durable: split: the Durable host as a worker again; draining ${2 * n + warmup} charges...`);
  const drainStarted = performance.now();
  await engineHost.switchRole('worker');
  await real.workflow.drain(900_000);
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  // Peak resident memory: the worker host's process group (dotnet and its Node worker) after the drain, and this process.
  const memoryPeakMb = { durableHost: groupPeakRssMb(engineHost.pid), benchProcess: selfPeakRssMb() };
  const drained = 2 * n + warmup;
  const charged = provider.charges.filter((c) => c.paymentId.startsWith('bench-split-')).length;
  return {
    payments: 2 * n + warmup,
    paced: {
      ratePerSecond,
      warmupMs,
      executionMsP50: round(percentile(paced, 50), 0),
      executionMsP99: round(percentile(paced, 99), 0),
      durationsMs: paced,
      eventLoopDelayMaxMs: round(loopDelay.max / 1e6, 0),
      slowRequests,
      stalls,
    },
    burst: {
      executionMsP50: round(percentile(burst, 50), 0),
      executionMsP99: round(percentile(burst, 99), 0),
      acksPerSecond: round(n / burstSeconds, 2),
      durationsMs: burst,
      cpuMsPerMessage: {
        ...Object.fromEntries(Object.entries(cpu.processes).map(([name, ms]) => [name, ms === undefined ? undefined : round(ms / n, 2)])),
        machine: cpu.machineMs === undefined ? undefined : round(cpu.machineMs / n, 2),
      } as CpuMsPerMessage,
    },
    triggerStoragePerMessage: Object.fromEntries(Object.entries(triggerStorage.requests).map(([k, v]) => [k, round(v / n, 2)])),
    drain: { seconds: round(drainSeconds, 1), paymentsPerSecond: round(drained / drainSeconds, 2) },
    memoryPeakMb,
    charged,
  };
}
