import { TableClient } from '@azure/data-tables';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { performance } from 'node:perf_hooks';
import { loadSettings } from '../../src/config/settings';
import { Telemetry } from '../../src/telemetry/Telemetry';
import { AzuriteTable } from '../azurite/AzuriteTable';
import { activeInstanceMs, type Execution } from '../cost/billableTime';
import { diffHostCounts, hostJsonLogLevels } from '../cost/hostTelemetry';
import { FakePaymentProvider } from '../fakeProvider/FakePaymentProvider';
import { LocalServiceBus } from '../local/LocalServiceBus';
import { startRealEnginePayments } from '../local/durable/realEnginePayments';
import { CountersProcess, type RemoteStorageCounter } from './CountersProcess';
import { percentile, round } from './stats';
import { diffCounts } from './StorageTrafficCounter';
import { BUS_IDLE_CAP_MS, countBy, merge, splitPhase } from './splitPhase';

/** The two payments designs (`PAYMENTS_DESIGN`). */
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
   * Handoff only: payments of the split phase (0 = none): with the Durable host as a `client`, this many paced at the
   * holding design's ceiling, then as many at once (the trigger alone); then a `worker` drains what was queued.
   */
  readonly splitPayments?: number;
  readonly log: (line: string) => void;
}

/** host.json's Service Bus settings the local bus copies: 60 s locks (infra default), auto-renewal for 5 min. */
const LOCK_MS = 60_000;
const RENEWAL = { beforeExpiryMs: 10_000, maxDurationMs: 300_000 };
/** What `LOCAL_TIME_SCALE` sets (host.json: 10 s): idle polling here is 20x Azure's default rate. */
export const LOCAL_MAX_QUEUE_POLLING_MS = 500;
const INVOCATION_TRACE = /bridge-invocation (\{.*\})$/;

/**
 * One design on the real Durable engine, counted on the wire (docs/performance.md): fresh payments on a local Service
 * Bus queue, `concurrency` receivers calling the registered `paymentsConsumer`, both Azurites behind storage counters,
 * the Durable client's calls through a counting proxy, every execution timed by the bridge, the app's log records.
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
    const counts = async () => ({
      app: await appCounter.snapshot(),
      engine: await engine.snapshot(),
      executions: durableExecutions.length,
      logs: logExporter.getFinishedLogRecords().length,
      host: await real.backend.engine.telemetryCounts(),
    });
    const before = await counts();
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
    await bus.whenIdle(BUS_IDLE_CAP_MS);
    const ackedSeconds = (performance.now() - started) / 1000;
    await real.workflow.drain(600_000);
    const finishedSeconds = (performance.now() - started) / 1000;
    const after = await counts();
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
      await bus.whenIdle(BUS_IDLE_CAP_MS);
      await real.workflow.drain(120_000);
      await new Promise((r) => setTimeout(r, 200)); // the bridge's trace lines of the last executions
      sparse.consumerActiveMs.push(activeInstanceMs(consumerExecutions.slice(from.consumer)));
      sparse.durableActiveMs.push(activeInstanceMs(durableExecutions.slice(from.durable)));
      sparse.consumerExecutionMs.push(...consumerExecutions.slice(from.consumer).map((e) => e.durationMs));
    }
    const split =
      design === 'handoff' && (options.splitPayments ?? 0) > 0
        ? await splitPhase({ options, real, bus, counters, azurite, appCounter, engine, provider, consumerExecutions })
        : undefined;
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
