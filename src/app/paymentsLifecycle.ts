import * as df from 'durable-functions';
import type { Settings } from '../config/settings';
import { systemClock, type Clock, keyFromMessageId, type IdempotencyRecord, type IdempotencyStore, type ReopenableStore } from 'azure-functions-idempotency';
import { holdCosmosRecords } from '../lifecycle/cosmosHeldRecords';
import { cosmosLapsedInProgressRecords } from '../lifecycle/cosmosLapsedRecords';
import { lapsedInProgressRecords, type ReconcilePosition } from '../lifecycle/lapsedRecords';
import { redeliveryWindow } from '../lifecycle/retention';
// Internal: the reconciler keeps live runs' records with the Table sweep's own hold pass (the store's row layout).
import { holdRecords } from 'azure-functions-idempotency/internal';
import { chargeEntityKey } from '../payments/ChargeWorkflow';
import { PAYMENTS_CONSUMER } from '../payments/PaymentsConsumer';
import type { Telemetry } from '../telemetry/Telemetry';
import { DurableChargeWorkflow } from './DurableChargeWorkflow';
import { statusOrUnknown, statusWithoutInput } from './durableInstances';
import type { RecordLive } from './durablePurge';
import { retryBudgetOf } from './payments';
import { retryFailedPayment } from './paymentRetry';
import { reconcilePayments, type ReconcileReport, type RunState } from './paymentReconciler';
import { cosmosIdempotencyContainer } from './cosmosClient';
import { consumerStoreFromSettings, storeFromSettings, type WiringOverrides } from './stores';
import { providerCapabilityOf } from '../payments/providerLookup';

/** The payments parts of the expiry timer's tick: the reconciler and the purge's liveness check, on the consumer's store. */
export interface PaymentsLifecycle {
  /** One reconciler pass (handoff design, Table store); undefined when it does not apply here, with why. */
  reconcile(client: df.DurableClient, budgetMs: number, telemetry: Telemetry): Promise<ReconcileReport | { skipped: string }>;
  readonly recordLive: RecordLive;
}

/** The state of a charge run, read without its input (`statusWithoutInput`); a 404 is `missing`. */
export async function runStateOf(client: df.DurableClient, instanceId: string): Promise<RunState> {
  const status = await statusOrUnknown(client, instanceId, statusWithoutInput(client));
  if (!status) return 'missing';
  switch (status.runtimeStatus) {
    case df.OrchestrationRuntimeStatus.Completed:
      return 'completed';
    case df.OrchestrationRuntimeStatus.Failed:
      return 'failed';
    case df.OrchestrationRuntimeStatus.Suspended:
      return 'suspended';
    case df.OrchestrationRuntimeStatus.Terminated:
    case df.OrchestrationRuntimeStatus.Canceled:
      return 'terminated';
    default:
      return 'running';
  }
}

/**
 * The attempt a run was started with (its input's `attempt`), read with the input (the default of `getStatus`): only
 * for a completed run whose record is still open (rare), so the payment in the input is read once, not per tick.
 * Undefined when the instance is gone or its input has no attempt.
 */
export async function runAttemptOf(client: df.DurableClient, instanceId: string): Promise<number | undefined> {
  const attempt = ((await statusOrUnknown(client, instanceId))?.input as { attempt?: unknown } | undefined)?.attempt;
  return typeof attempt === 'number' ? attempt : undefined;
}

/** What one reconciler pass runs on: the in-progress records' source, the task hub's client, the consumer's store. */
export interface ReconcileOn {
  readonly records: (lapsedBeforeMs: number) => AsyncIterable<IdempotencyRecord>;
  readonly client: df.DurableClient;
  readonly store: ReopenableStore;
  readonly settings: Settings;
  readonly telemetry: Telemetry;
  readonly clock: Clock;
  readonly budgetMs: number;
  /** Keeps the records of runs still going alive (`ReconcileDeps.keepAlive`); absent: not done. */
  readonly keepAlive?: (records: readonly IdempotencyRecord[]) => Promise<void>;
  /** The wait behind the Durable client's deadline (default a real timer; the simulator passes its clock's). */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * One reconciler pass (`reconcilePayments`): run states from the task hub, restarts through the operator's retry
 * path (`retryFailedPayment`, origin `reconciler`) with the settings' retry budget and provider capability.
 */
export function reconcileOn(on: ReconcileOn): Promise<ReconcileReport> {
  const { client, store, settings } = on;
  const workflow = new DurableChargeWorkflow(client, { sleep: on.sleep });
  return reconcilePayments({
    records: on.records,
    runState: (instanceId) => runStateOf(client, instanceId),
    runAttempt: (instanceId) => runAttemptOf(client, instanceId),
    restart: (record) =>
      retryFailedPayment(
        {
          store,
          start: (id, input) => workflow.start(id, input),
          retry: retryBudgetOf(settings),
          provider: providerCapabilityOf(settings),
          nowMs: () => on.clock.nowMs(),
          origin: 'reconciler',
          listed: record,
        },
        record.key,
      ),
    telemetry: on.telemetry,
    clock: on.clock,
    budgetMs: on.budgetMs,
    keepAlive: on.keepAlive,
  });
}

/** The purge's liveness check: the payments record of the key exists and is of the lifetime whose entity key is given. */
export function recordLiveIn(store: IdempotencyStore): RecordLive {
  return async (idempotencyKey, entityKey) => {
    const record = await store.get(keyFromMessageId(PAYMENTS_CONSUMER, idempotencyKey));
    return record !== undefined && chargeEntityKey(record.recordId, record.createdAtMs, record.digest) === entityKey;
  };
}

/**
 * The reconciler (`reconcilePayments`) and the purge's liveness check wired from settings: the payments
 * consumer's store (`IDEMPOTENCY_STORE`), the handoff retry budget and `PAYMENT_PROVIDER_LOOKUP` for restarted runs.
 * The reconciler reads in-progress records from the store the consumer writes (Table: a query per partition; Cosmos:
 * one cross-partition query). With `PAYMENTS_DESIGN=hold` it is skipped (and says so each tick): the message stays
 * with the broker until done.
 */
export function paymentsLifecycleFromSettings(settings: Settings, overrides: WiringOverrides & { clock?: Clock } = {}): PaymentsLifecycle {
  const tableStore = storeFromSettings(settings, overrides);
  const store = consumerStoreFromSettings(settings, overrides, tableStore);
  const clock = overrides.clock ?? systemClock;
  const cosmos = settings.IDEMPOTENCY_STORE === 'cosmos' ? (overrides.idempotencyContainer ?? cosmosIdempotencyContainer(settings)) : undefined;
  const position: ReconcilePosition = { partition: 0 };
  return {
    async reconcile(client, budgetMs, telemetry) {
      if (settings.PAYMENTS_DESIGN !== 'handoff') return { skipped: 'PAYMENTS_DESIGN=hold: the broker keeps each message until its charge is done' };
      return reconcileOn({
        records: (lapsedBeforeMs) =>
          cosmos
            ? cosmosLapsedInProgressRecords(cosmos, { consumer: PAYMENTS_CONSUMER, lapsedBeforeMs })
            : lapsedInProgressRecords(tableStore.client, {
                consumer: PAYMENTS_CONSUMER,
                partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
                lapsedBeforeMs,
                position,
              }),
        client,
        store,
        settings,
        telemetry,
        clock,
        budgetMs,
        // The sweep's own hold on the records whose run goes on: Table, the hold pass (heldRecords.ts); Cosmos, the
        // documents' retention and `ttl` moved on (`holdCosmosRecords`, as for dead letters).
        keepAlive: async (records) => {
          if (records.length === 0) return;
          const keys = records.map((r) => keyFromMessageId(PAYMENTS_CONSUMER, r.key));
          const sources = [{ name: 'payments runs still going', heldKeys: async () => keys }];
          const holdMs = redeliveryWindow(settings).totalMs;
          if (cosmos) await holdCosmosRecords(cosmos, sources, { holdMs, clock, callTimeoutMs: settings.IDEMPOTENCY_STORE_TIMEOUT_MS });
          else await holdRecords(tableStore.client, sources, { partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT, holdMs, clock });
        },
      });
    },
    recordLive: recordLiveIn(store),
  };
}
