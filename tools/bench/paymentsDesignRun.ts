import { TableClient } from '@azure/data-tables';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { loadSettings } from '../../src/config/settings';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { AzuriteTable } from '../azurite/AzuriteTable';
import { StallLog, watchStalls, type Stall } from '../azurite/stallWatch';
import { activeInstanceMs, type Execution } from '../cost/billableTime';
import { diffHostCounts, hostJsonLogLevels } from '../cost/hostTelemetry';
import { FakePaymentProvider } from '../fakeProvider/FakePaymentProvider';
import { LocalServiceBus } from '../local/LocalServiceBus';
import { startRealEnginePayments } from '../local/durable/realEnginePayments';
import { CountersProcess, type RemoteStorageCounter } from './CountersProcess';
import type { CpuMsPerMessage, ProcessStalls } from './designSummary';
import { groupPeakRssMb, processesBetween, sampleProcesses, selfPeakRssMb } from './cpuMeter';
import { percentile, round } from './stats';
import { diffCounts, type StorageCounts } from './StorageTrafficCounter';

/** The two payments designs of issue 23 (`PAYMENTS_DESIGN`). */
export type PaymentsDesign = 'hold' | 'handoff';

export interface DesignRunOptions {
  readonly design: PaymentsDesign;
  readonly payments: number;
  /** Receivers at once: host.json `maxConcurrentCalls` (16). */
  readonly concurrency: number;
  readonly providerMs: number;
  /** Seconds of an idle hub measured before the workload (idle polling). */
  readonly idleSeconds: number;
  /** Payments sent one at a time after the workload (thin traffic: each billed alone); 0 = none. */
  readonly sparsePayments: number;
  /**
   * Handoff only: payments of the split phase (0 = none). The Durable host becomes a `client` (it runs no
   * orchestration), so the trigger is measured alone, as when the charges run on other instances: first this many
   * paced at the holding design's ceiling (concurrency / provider seconds per second), then as many at once (a
   * burst); then the host becomes a `worker` again and drains what was queued.
   */
  readonly splitPayments?: number;
  readonly log: (line: string) => void;
}

/** The design is not in this build (the hand-off lands with `PAYMENTS_DESIGN`): nothing is measured for it. */
export class DesignUnavailableError extends Error {}

/** host.json's Service Bus settings the local bus copies: 60 s locks (infra default), auto-renewal for 5 min. */
const LOCK_MS = 60_000;
const RENEWAL = { beforeExpiryMs: 10_000, maxDurationMs: 300_000 };
/** What `LOCAL_TIME_SCALE` sets (host.json: 10 s): idle polling here is 20x Azure's default rate. */
export const LOCAL_MAX_QUEUE_POLLING_MS = 500;
const INVOCATION_TRACE = /bridge-invocation (\{.*\})$/;

/**
 * One design on the real Durable engine, counted on the wire: fresh payments sent to a local Service Bus queue,
 * `concurrency` receivers calling the registered `paymentsConsumer` (lock auto-renewal as the host does), the
 * charge run by the Durable Task extension on its own Azurite behind a {@link StorageTrafficCounter}, the
 * consumer's tables behind another, the trigger's Durable client calls through {@link countingRpcProxy}, every
 * Durable execution timed by the bridge, the app's log records captured by an in-memory OpenTelemetry exporter.
 * @throws DesignUnavailableError when `design` is `handoff` and this build has no `PAYMENTS_DESIGN` setting.
 */
export async function runDesign(options: DesignRunOptions) {
  const { design, payments, concurrency, providerMs, log } = options;
  const azurite = await AzuriteTable.start();
  const cleanup: Array<() => Promise<unknown>> = [() => azurite.stop()];
  try {
    // The counting proxies run in a process of their own: this one's CPU is then the trigger's and the bus's.
    const counters = await CountersProcess.start();
    cleanup.unshift(() => counters.stop());
    const appCounter = await counters.storage(azurite.connectionString, { prefix: 'bench' });
    const provider = await FakePaymentProvider.start({ latencyMs: providerMs });
    cleanup.unshift(() => provider.stop());
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: appCounter.connectionString,
      PAYMENT_PROVIDER_URL: provider.url,
      IDEMPOTENCY_CACHE_SIZE: '0',
      PAYMENTS_DESIGN: design,
    });
    const chosen = (settings as { PAYMENTS_DESIGN?: string }).PAYMENTS_DESIGN;
    if (chosen !== design && !(design === 'hold' && chosen === undefined))
      throw new DesignUnavailableError(`design '${design}' is not in this build (settings have no PAYMENTS_DESIGN=${design})`);
    // The Durable host inherits this process's environment: the built app reads the design, the bridge times executions.
    const savedEnv = { PAYMENTS_DESIGN: process.env.PAYMENTS_DESIGN, DURABLE_BRIDGE_TRACE_INVOCATIONS: process.env.DURABLE_BRIDGE_TRACE_INVOCATIONS };
    cleanup.push(async () => {
      for (const [name, value] of Object.entries(savedEnv))
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    });
    process.env.PAYMENTS_DESIGN = design;
    process.env.DURABLE_BRIDGE_TRACE_INVOCATIONS = '1';
    const logExporter = new InMemoryLogRecordExporter();
    const loggerProvider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter: logExporter })] });
    const telemetry = new Telemetry(undefined, loggerProvider.getLogger('bench'));
    const rpc = await counters.rpc('http://127.0.0.1:17071');
    const hubName = `bench${design}${Math.random().toString(36).slice(2, 7)}`;
    let engineCounter: RemoteStorageCounter | undefined;
    const durableExecutions: Array<Execution & { name: string; ok: boolean }> = [];
    log(`bench:durable: ${design}: starting the real Durable engine...`);
    const real = await startRealEnginePayments({
      settings,
      hubName,
      overrides: {
        telemetry,
        tableClient: (name) => TableClient.fromConnectionString(appCounter.connectionString, `bench${name}`, { allowInsecureConnection: true }),
      },
      clientBinding: (client) => JSON.stringify({ ...(JSON.parse(client) as object), rpcBaseUrl: `${rpc.url}/durabletask/` }),
      engineStorage: async (connectionString) => {
        engineCounter = await counters.storage(connectionString, { hub: hubName });
        return engineCounter.connectionString;
      },
      log: (line) => {
        const trace = INVOCATION_TRACE.exec(line);
        if (trace) durableExecutions.push(JSON.parse(trace[1]) as Execution & { name: string; ok: boolean });
      },
    });
    cleanup.unshift(() => real.close());
    const engine = engineCounter!;
    await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);

    // Idle: the hub with nothing to do, after its pollers backed off (2 s settle).
    await new Promise((r) => setTimeout(r, 2_000));
    const idleBefore = await engine.snapshot();
    await new Promise((r) => setTimeout(r, options.idleSeconds * 1000));
    const idle = diffCounts(await engine.snapshot(), idleBefore);

    log(`bench:durable: ${design}: ${payments} payments, ${concurrency} receivers, provider ${providerMs} ms...`);
    const before = {
      app: await appCounter.snapshot(),
      engine: await engine.snapshot(),
      executions: durableExecutions.length,
      logs: logExporter.getFinishedLogRecords().length,
      host: await real.backend.engine.telemetryCounts(),
    };
    const rpcBefore = await rpc.counts();
    const consumerExecutions: Execution[] = [];
    const bus = new LocalServiceBus({ lockDurationMs: LOCK_MS, maxDeliveryCount: 10 }, { autoRenewLock: RENEWAL });
    const started = performance.now();
    for (let i = 0; i < payments; i++) {
      const paymentId = `bench-${design}-${i}`;
      bus.send('payments', { messageId: paymentId, body: JSON.stringify({ paymentId, customerId: 'c', amount: 100 + i, currency: 'EUR' }) });
    }
    bus.start(
      {
        name: 'payments',
        queue: 'payments',
        deliver: async (body, meta) => {
          const startMs = Date.now();
          try {
            return await real.deliver(body, { messageId: meta.messageId, deliveryCount: meta.deliveryCount });
          } finally {
            consumerExecutions.push({ startMs, durationMs: Date.now() - startMs });
          }
        },
      },
      concurrency,
    );
    while (!bus.idle) await new Promise((r) => setTimeout(r, 20));
    const ackedSeconds = (performance.now() - started) / 1000;
    await real.workflow.drain(600_000);
    const finishedSeconds = (performance.now() - started) / 1000;
    const after = {
      app: await appCounter.snapshot(),
      engine: await engine.snapshot(),
      executions: durableExecutions.length,
      logs: logExporter.getFinishedLogRecords().length,
      host: await real.backend.engine.telemetryCounts(),
    };
    const rpcAfter = await rpc.counts();
    const busStats = { ...bus.queue('payments').stats };
    const unfinished = await real.backend.store.unfinishedInstances();
    const failed = await real.backend.store.failedInstances();
    const consumerCount = consumerExecutions.length;

    // Thin traffic: one payment at a time, each finished before the next; its executions' active time measured alone.
    const sparse = { consumerActiveMs: [] as number[], durableActiveMs: [] as number[], consumerExecutionMs: [] as number[] };
    for (let i = 0; i < options.sparsePayments; i++) {
      const from = { consumer: consumerExecutions.length, durable: durableExecutions.length };
      const paymentId = `bench-${design}-sparse-${i}`;
      bus.send('payments', { messageId: paymentId, body: JSON.stringify({ paymentId, customerId: 'c', amount: 10 + i, currency: 'EUR' }) });
      while (!bus.idle) await new Promise((r) => setTimeout(r, 20));
      await real.workflow.drain(120_000);
      await new Promise((r) => setTimeout(r, 200)); // the bridge's trace lines of the last executions
      sparse.consumerActiveMs.push(activeInstanceMs(consumerExecutions.slice(from.consumer)));
      sparse.durableActiveMs.push(activeInstanceMs(durableExecutions.slice(from.durable)));
      sparse.consumerExecutionMs.push(...consumerExecutions.slice(from.consumer).map((e) => e.durationMs));
    }
    /** The trigger alone (client-role host), paced then in a burst; then the worker drains: see {@link DesignRunOptions.splitPayments}. */
    async function splitPhase(): Promise<SplitPhase> {
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
        while (!bus.idle) await new Promise((r) => setTimeout(r, 20));
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
      while (!bus.idle) await new Promise((r) => setTimeout(r, 20));
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
    const split = design === 'handoff' && (options.splitPayments ?? 0) > 0 ? await splitPhase() : undefined;
    await bus.stop();
    const logs = logExporter.getFinishedLogRecords().slice(before.logs, after.logs);
    const logBytes = logs.reduce(
      (sum, r) => sum + Buffer.byteLength(JSON.stringify({ time: r.hrTime, severity: r.severityText, body: r.body, attributes: r.attributes })),
      0,
    );
    const executions = durableExecutions.slice(before.executions, after.executions);
    const durations = consumerExecutions.slice(0, consumerCount).map((e) => e.durationMs);
    const mean = (xs: number[]) => (xs.length === 0 ? 0 : round(xs.reduce((a, b) => a + b, 0) / xs.length, 0));
    return {
      design,
      payments,
      concurrency,
      providerMs,
      maxQueuePollingIntervalMs: LOCAL_MAX_QUEUE_POLLING_MS,
      consumer: {
        executionMsP50: round(percentile(durations, 50), 0),
        executionMsP99: round(percentile(durations, 99), 0),
        executions: consumerCount,
        executionMsTotal: durations.reduce((a, b) => a + b, 0),
        activeInstanceMs: activeInstanceMs(consumerExecutions.slice(0, consumerCount)),
        durationsMs: durations,
      },
      durable: {
        executions: executions.length,
        byFunction: countBy(executions.map((e) => e.name)),
        failedExecutions: executions.filter((e) => !e.ok).length,
        executionMsTotal: executions.reduce((a, e) => a + e.durationMs, 0),
        activeInstanceMs: activeInstanceMs(executions),
        durationsMs: executions.map((e) => e.durationMs),
      },
      sparse: {
        payments: options.sparsePayments,
        consumerActiveMsPerPayment: mean(sparse.consumerActiveMs),
        durableActiveMsPerPayment: mean(sparse.durableActiveMs),
        consumerExecutionMs: sparse.consumerExecutionMs,
      },
      statusPollsPerPayment: round((rpcAfter.statusPolls - rpcBefore.statusPolls) / payments, 2),
      startsPerPayment: round((rpcAfter.starts - rpcBefore.starts) / payments, 2),
      paymentsPerSecond: round(payments / finishedSeconds, 2),
      acksPerSecond: round(payments / ackedSeconds, 2),
      seconds: { acked: round(ackedSeconds, 1), finished: round(finishedSeconds, 1) },
      storage: {
        workload: merge({ app: diffCounts(after.app, before.app), durable: diffCounts(after.engine, before.engine) }),
        idle: { seconds: options.idleSeconds, ...merge({ durable: idle }) },
      },
      serviceBus: {
        sends: busStats.sent,
        receives: busStats.deliveries,
        completes: busStats.completed,
        abandons: busStats.abandoned,
        renewals: busStats.renewed,
        deadLettered: busStats.deadLettered,
      },
      telemetry: { logRecords: logs.length, logBytes },
      /** The Durable host's log records at host.json's `logging.logLevel` (`levels`) during the workload: what the Functions host would forward to Application Insights. */
      hostTelemetry: { levels: hostJsonLogLevels(real.backend.engine.hostJsonPath), records: diffHostCounts(after.host.records, before.host.records) },
      providerCharges: provider.charges.filter((c) => !c.paymentId.includes('-sparse-') && !c.paymentId.startsWith('bench-split-')).length,
      ...(split ? { split } : {}),
      unfinishedInstances: unfinished.length,
      failedInstances: failed.length,
    };
  } finally {
    for (const step of cleanup) await step().catch(() => undefined);
  }
}

export type DesignReport = Awaited<ReturnType<typeof runDesign>>;

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

function countBy(names: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of names) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

/** Counts of several accounts under one map: `app.table.Idempotency.insert`, `durable.queue.control.emptyGet`, ... */
function merge(accounts: Record<string, StorageCounts>): {
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
