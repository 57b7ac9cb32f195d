import { TableClient } from '@azure/data-tables';
import { CHARGE_ENTITY } from '../../../src/app/durableCharge';
import type { PaymentsOverrides } from '../../../src/app/payments';
import { paymentsFunctionsFrom, registerPaymentsFunctions } from '../../../src/app/paymentsFunctions';
import type { Settings } from '../../../src/config/settings';
import type { ChargeEntityState } from '../../../src/payments/chargeEntity';
import type { PaymentDeliveryResult } from '../../../src/payments/PaymentsConsumer';
import { InvocationFailedError, WorkerHost } from '../host/WorkerHost';
import { serviceBusRequest, type ServiceBusMetadata } from '../host/serviceBusRequest';
import { AzuriteStorage } from './AzuriteStorage';
import { DurableEngineHost } from './DurableEngineHost';
import { EngineStorageGate, type EngineStorageRequest, type GateVerdict } from './EngineStorageGate';
import { ProviderTap } from './ProviderTap';

export interface RealEnginePaymentsOptions {
  readonly settings: Settings;
  /** The consumer's overrides (tables, clock, lease): the trigger runs in this process, as the demo's bus calls it. */
  readonly overrides: PaymentsOverrides;
  /** Task hub name (letters and digits); default `payments` + a random suffix. */
  readonly hubName?: string;
  /** Laid over host.json's `extensions.durableTask`; default {@link LOCAL_TIME_SCALE}. */
  readonly durableOverrides?: Readonly<Record<string, unknown>>;
  /** After the provider answered a charge: true kills the Durable host before the activity hears it, then restarts it. */
  readonly killAfterCharge?: (paymentId: string) => boolean;
  /**
   * Before the engine's request to its task hub's storage is forwarded: `kill` kills the host there (the request never
   * lands), then restarts it; `stall` never forwards it nor answers it (a worker stuck at that step, the host going on);
   * a promise holds the request until it settles (a step delayed while the test acts).
   */
  readonly onEngineStorage?: (request: EngineStorageRequest) => 'kill' | 'stall' | 'pass' | Promise<'pass'>;
  /**
   * The engine's worker reaches the consumer's record table through a gate: `verdict` before each request (`busy`: a
   * 503), `answered` once the table answered, before the worker hears it.
   */
  readonly workerTable?: {
    readonly verdict?: (request: EngineStorageRequest) => GateVerdict;
    readonly answered?: (request: EngineStorageRequest, status: number) => Promise<void> | void;
  };
  readonly log?: (line: string) => void;
  /** Rewrites the durableClient binding data the trigger gets (the bench points `rpcBaseUrl` at a counting proxy). */
  readonly clientBinding?: (json: string) => string;
  /** The task hub's connection string as the engine gets it (the bench puts a counting proxy in front of Azurite). */
  readonly engineStorage?: (connectionString: string) => Promise<string>;
  /** False for a second engine beside one holding port 17071 (a shard of its own: `DurableEngineHostOptions.portLock`). */
  readonly portLock?: boolean;
}

/** Time scaled for local runs: host.json's `maxQueuePollingInterval` (10 s: an idle hub's wait per queue hop) -> 500 ms. */
export const LOCAL_TIME_SCALE = {
  storageProvider: { maxQueuePollingInterval: '00:00:00.500' },
} as const;

/** An Instances-table filter: orchestrations not in a final state, entities ('@'-prefixed ids sort below 'A') left out. */
const UNFINISHED_ORCHESTRATIONS =
  `(PartitionKey lt '@' or PartitionKey ge 'A') and ` +
  ['Completed', 'Failed', 'Terminated', 'Canceled'].map((status) => `RuntimeStatus ne '${status}'`).join(' and ');

/**
 * The payments functions on the real Durable engine (`tools/durable-host`, on an Azurite of its own); the Service Bus
 * trigger, registered by the same `registerPaymentsFunctions`, invoked here as the host invokes it, with the
 * `durableClient` binding data the extension produced. `killAfterCharge` makes real host crashes: SIGKILL of the
 * host and its Node worker after the provider charged, before the engine checkpointed the result; then a restart.
 */
export async function startRealEnginePayments(options: RealEnginePaymentsOptions) {
  const storage = await AzuriteStorage.start();
  const hubName = options.hubName ?? `payments${Math.random().toString(36).slice(2, 8)}`;
  let engine: DurableEngineHost | undefined;
  /** Host kills after a charge (`crashes`, as the other backends name their injected crashes) and restarts. */
  const kills = { crashes: 0, restarts: 0 };
  let restarting: Promise<void> | undefined;
  /** A crash of the host (SIGKILL of it and its Node worker), then a restart on the same task hub. */
  const crash = () => {
    kills.crashes++;
    restarting ??= (async () => {
      await engine!.kill();
      await engine!.restart();
      kills.restarts++;
    })().finally(() => (restarting = undefined));
  };
  const tap = await ProviderTap.start(options.settings.PAYMENT_PROVIDER_URL!, ({ paymentId, status }) => {
    if (status >= 300 || !options.killAfterCharge?.(paymentId) || !engine?.running) return 'pass';
    crash();
    return 'hold';
  });
  const onEngineStorage = options.onEngineStorage;
  const gate = onEngineStorage
    ? await EngineStorageGate.start(storage.connectionString, (request) => {
        const step = engine?.running && !restarting ? onEngineStorage(request) : 'pass';
        if (step === 'pass' || typeof step !== 'string') return step;
        if (step === 'kill') crash();
        return 'cut';
      })
    : undefined;
  const recordTable = options.settings.IDEMPOTENCY_TABLE_CONNECTION_STRING;
  const { workerTable } = options;
  const workerGate =
    workerTable && recordTable ? await EngineStorageGate.start(recordTable, workerTable.verdict ?? (() => 'pass'), workerTable.answered) : undefined;
  try {
    const engineConnection = gate?.connectionString ?? storage.connectionString;
    engine = await DurableEngineHost.start({
      storageConnectionString: options.engineStorage ? await options.engineStorage(engineConnection) : engineConnection,
      hubName,
      overrides: options.durableOverrides ?? LOCAL_TIME_SCALE,
      portLock: options.portLock,
      log: options.log,
      appSettings: {
        PAYMENT_PROVIDER_URL: tap.url,
        PAYMENT_PROVIDER_TIMEOUT_MS: String(options.settings.PAYMENT_PROVIDER_TIMEOUT_MS),
        ...recordStoreSettings(options, workerGate?.connectionString),
      },
    });
  } catch (error) {
    await tap.stop();
    await gate?.stop();
    await workerGate?.stop();
    await storage.stop();
    throw error;
  }
  const functions = paymentsFunctionsFrom(options.settings, options.overrides);
  const worker = WorkerHost.load(() => registerPaymentsFunctions(functions));
  const hubTable = (suffix: string) => TableClient.fromConnectionString(storage.connectionString, `${hubName}${suffix}`, { allowInsecureConnection: true });
  const rpc = () => (JSON.parse(engine.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl;

  /** One delivery through the registered trigger; while the host is down (being restarted) it waits, as a dead host receives nothing. */
  async function deliver(body: unknown, metadata: ServiceBusMetadata): Promise<PaymentDeliveryResult> {
    while (restarting) await restarting;
    try {
      const client = options.clientBinding ? options.clientBinding(engine!.clientBindingData) : engine!.clientBindingData;
      return (await worker.invoke('paymentsConsumer', serviceBusRequest(worker, body, metadata, client))) as PaymentDeliveryResult;
    } catch (error) {
      throw error instanceof InvocationFailedError ? error.error : error;
    }
  }

  /** Rows of the hub's Instances table that match `filter` (run in the storage service), with the columns asked for. */
  async function instancesWhere<T extends object>(filter: string, select: string[]): Promise<Array<T & { partitionKey: string }>> {
    const rows: Array<T & { partitionKey: string }> = [];
    try {
      const entities = hubTable('Instances').listEntities<T>({ queryOptions: { filter, select: ['PartitionKey', ...select] } });
      for await (const row of entities) rows.push(row as T & { partitionKey: string });
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode !== 404) throw error;
    }
    return rows;
  }

  /** Orchestrations of the hub that are not final (entities, whose ids start with '@', are left out). */
  async function unfinishedInstances(): Promise<string[]> {
    const rows = await instancesWhere<{ RuntimeStatus?: string }>(UNFINISHED_ORCHESTRATIONS, []);
    return rows.map((row) => row.partitionKey).filter((id) => !id.startsWith('@'));
  }

  /** Orchestrations of the hub that are not final, with their runtime status (`Pending`, `Running`, ...). */
  async function unfinishedRuns(): Promise<Map<string, string>> {
    const rows = await instancesWhere<{ RuntimeStatus?: string }>(UNFINISHED_ORCHESTRATIONS, ['RuntimeStatus']);
    return new Map(rows.filter((row) => !row.partitionKey.startsWith('@')).map((row) => [row.partitionKey, String(row.RuntimeStatus ?? 'unknown')]));
  }

  /** Charge orchestrations of the hub that failed, with the engine's failure text (their Output). */
  async function failedInstances(): Promise<Array<{ instanceId: string; output: string }>> {
    const rows = await instancesWhere<{ Output?: string }>(`RuntimeStatus eq 'Failed'`, ['Output']);
    return rows.map((row) => ({ instanceId: row.partitionKey, output: String(row.Output ?? '') }));
  }

  /**
   * Waits until every orchestration of the hub is final, for as long as their number keeps falling: it gives up
   * only after `stalledMs` without one finishing, or after `capMs` in all. Polls at 100 ms, doubling to 2 s.
   */
  async function drain(stalledMs = 120_000, capMs = 30 * 60_000): Promise<void> {
    const cap = Date.now() + capMs;
    let fewest = Number.POSITIVE_INFINITY;
    let progressAt = Date.now();
    for (let pollMs = 100; ; pollMs = Math.min(2 * pollMs, 2_000)) {
      while (restarting) await restarting;
      const left = (await unfinishedInstances()).length;
      if (left === 0) return;
      if (left < fewest) {
        fewest = left;
        progressAt = Date.now();
      }
      if (Date.now() - progressAt >= stalledMs || Date.now() >= cap) {
        options.log?.(`drain: gave up with ${left} orchestration(s) unfinished`);
        return;
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  const workflow = {
    counters: kills,
    /** The `paymentCharge` entity's state, read through the extension's HTTP API. */
    async entityState(entityKey: string): Promise<ChargeEntityState | undefined> {
      const response = await fetch(`${rpc()}entities/${CHARGE_ENTITY}/${entityKey}`);
      if (response.status === 404) return undefined;
      if (!response.ok) throw new Error(`reading entity ${entityKey}: HTTP ${response.status}`);
      return (await response.json()) as ChargeEntityState;
    },
    /**
     * The entity's state once `settled` holds, or its last state after `capMs`: a run tells the entity its result
     * one-way (`signalEntity`), so the run can be final (`drain`) a moment before the entity has applied it.
     */
    async entityStateWhen(
      entityKey: string,
      settled: (state: ChargeEntityState | undefined) => boolean,
      capMs = 60_000,
    ): Promise<ChargeEntityState | undefined> {
      const cap = Date.now() + capMs;
      for (let pollMs = 50; ; pollMs = Math.min(2 * pollMs, 1_000)) {
        const state = await workflow.entityState(entityKey);
        if (settled(state) || Date.now() >= cap) return state;
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
    drain,
    /** Waits for the hub's orchestrations to finish (as `drain`); the engine keeps running until `close`. */
    stop: () => drain(),
  };
  /** Stops the Durable host, the provider tap and the hub's Azurite. */
  async function close(): Promise<void> {
    await engine?.stop();
    await tap.stop();
    await gate?.stop();
    await workerGate?.stop();
    await storage.stop();
  }
  const backend = {
    kind: 'real' as const,
    counters: kills,
    store: { unfinishedInstances, unfinishedRuns, failedInstances },
    engine: engine,
    storage,
    hubName,
    hubTable,
    /** A crash of the host now (SIGKILL), then a restart on the same task hub; resolves once it runs again. */
    async crashHost(): Promise<void> {
      crash();
      while (restarting) await restarting;
    },
  };
  /** The pid of the engine's Azurite (the bench reads its CPU time). */
  const storagePid = () => storage.pid;
  return { worker, functions, parts: functions.parts(), deliver, workflow, backend, close, storagePid };
}

/**
 * The app settings of the consumer's dedup table for the engine's worker (the handoff run's `completePaymentRecord`
 * writes the record there, through the trigger's endpoint), with the table name the overrides' client has.
 */
function recordStoreSettings(options: RealEnginePaymentsOptions, connectionString?: string): Record<string, string> {
  const { settings, overrides } = options;
  const tableName = overrides.tableClient?.(settings.IDEMPOTENCY_TABLE_NAME).tableName ?? settings.IDEMPOTENCY_TABLE_NAME;
  return {
    IDEMPOTENCY_TABLE_CONNECTION_STRING: connectionString ?? settings.IDEMPOTENCY_TABLE_CONNECTION_STRING ?? '',
    IDEMPOTENCY_TABLE_NAME: tableName,
    IDEMPOTENCY_PARTITION_COUNT: String(settings.IDEMPOTENCY_PARTITION_COUNT),
    PAYMENTS_DESIGN: overrides.design ?? settings.PAYMENTS_DESIGN,
    // The runs get the mode in their input (from the trigger's settings); the worker gets it too, as in Azure.
    PAYMENT_PROVIDER_LOOKUP: settings.PAYMENT_PROVIDER_LOOKUP,
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: String(settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS),
  };
}
