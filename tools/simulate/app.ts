import { keyFromMessageId } from 'azure-functions-idempotency';
import type { Settings } from '../../src/config/settings';
import { simSettings } from './settings';
import { DurableChargeWorkflow } from '../../src/app/DurableChargeWorkflow';
import { chargePaymentOrchestrator } from '../../src/app/durableCharge';
import { purgeDurableRecords } from '../../src/app/durablePurge';
import { retryBudgetOf } from '../../src/app/payments';
import { paymentsRideOutPlan } from '../../src/app/paymentsFunctions';
import { makePaymentsHandler } from '../../src/app/paymentsHandler';
import { reconcileOn, recordLiveIn } from '../../src/app/paymentsLifecycle';
import { tickShares } from '../../src/lifecycle/tickBudget';
import { redeliveryWindow, retentionMsOf } from '../../src/lifecycle/retention';
import type { ParkingStore } from '../../src/messaging/ParkingStore';
import { waitBudgetMsOf } from '../../src/payments/chargePatience';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { PaymentsConsumer, PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import { providerCapabilityOf } from '../../src/payments/providerLookup';
import { SimBus } from './bus';
import { SimDurableClient } from './client';
import type { FaultRates, Mutation } from './faults';
import { SimTaskHub } from './hub';
import { SimProvider } from './provider';
import type { ProviderWorld } from './profiles';
import type { Random } from './random';
import { SimStore } from './store';
import { SimTelemetry } from './telemetry';
import { simTableClient } from './tableQuery';
import type { TableClient } from '@azure/data-tables';
import { lapsedInProgressRecords, type ReconcilePosition } from '../../src/lifecycle/lapsedRecords';
import { simActivities, triggerWorkflow } from './activities';
import { StepJudge } from './steps';
import { operatorRetry } from './operatorRetry';
import type { World } from './world';

/**
 * The app's own code for the payments lifecycle, wired to the simulated world: the Service Bus trigger
 * (`makePaymentsHandler`: claim, start, ack, the outage ride-out) with `DurableChargeWorkflow`, the `chargePayment`
 * orchestrator and its activities (`chargeProviderActivity`, `completeRecordActivity`) run by the simulated task hub,
 * and the expiry timer's payments parts in its order: the sweep (holding dead-lettered keys), the reconciler
 * (`reconcileOn`), the purge (`purgeDurableRecords`). The operator's retry is `retryFailedPayment`.
 */
export class SimApp {
  readonly settings: Settings;
  readonly store: SimStore;
  readonly hub: SimTaskHub;
  readonly client: SimDurableClient;
  readonly bus: SimBus;
  readonly provider: SimProvider;
  readonly telemetry: SimTelemetry;
  /** Payments whose record was seen completed, with the result seen (the sweep may delete the record later). */
  readonly completedOnce = new Map<string, unknown>();
  readonly retentionMs: number;
  /** Keys an operator released after checking at the provider what the key charged (a held payment's retry). */
  readonly released = new Map<string, number>();
  /** Records the sweep deleted, with what was still alive then (the invariants read it). */
  readonly sweptWhileLive: string[] = [];
  readonly purgedWhileLive: string[] = [];
  /** The consumer's table as the reconciler queries it (tableQuery.ts), and where its read stands between ticks. */
  private readonly table: TableClient;
  private readonly reconcilePosition: ReconcilePosition = { partition: 0 };
  /** The invariants judged at each step (store writes, runs ending). */
  readonly steps: StepJudge;
  /** What a scenario's script saw happen, in order (its premise reads it). */
  readonly scriptSaw: string[] = [];
  /** Calls the fence refused (record unreadable, past the fresh window), with the work item's age. */
  readonly fenceRefusals: Array<{ readonly key: string; readonly atMs: number; readonly ageMs: number }> = [];

  constructor(
    readonly world: World,
    random: Random,
    rates: FaultRates,
    lookup: 'none' | 'by-key',
    mutation?: Mutation,
    extraSettings?: Readonly<Record<string, string>>,
    /** World 2: the provider profile and its draws (profiles.ts), and the stream of those draws; else the legacy provider. */
    providerWorld?: ProviderWorld,
    providerDraws?: Random,
  ) {
    this.settings = simSettings(lookup, extraSettings);
    this.retentionMs = retentionMsOf(this.settings);
    this.telemetry = new SimTelemetry(world);
    const settings = this.settings;
    this.store = new SimStore(
      world,
      random.fork(),
      { unavailable: rates['table-unavailable'], lostAnswer: rates['table-lost-answer'], emptyPage: rates['table-empty-page'] },
      {
        leaseMs: settings.IDEMPOTENCY_LEASE_SECONDS * 1000,
        retentionMs: retentionMsOf(settings),
      },
    );
    this.hub = new SimTaskHub(world, random.fork(), {
      queueWait: rates['df-queue-wait'],
      activityCrash: rates['df-activity-crash'],
      hostRestart: rates['df-host-restart'],
      duplicateStart: rates['df-duplicate-start'],
      timerLate: rates['df-timer-late'],
      redeliverAnswered: rates['df-work-item-again'],
    });
    this.client = new SimDurableClient(world, random.fork(), this.hub, rates['table-empty-page'] > 0, rates['df-client-slow']);
    this.provider = new SimProvider(
      world,
      random.fork(),
      {
        error5xx: rates['provider-5xx'],
        error5xxAfter: rates['provider-5xx-after'],
        lostAnswer: rates['provider-lost-answer'],
        lookupLagMs: rates['provider-lookup-lag'] > 0 ? 60_000 : 0,
      },
      lookup,
      providerWorld?.profile.keyMemoryMs ?? settings.PAYMENT_PROVIDER_KEY_MEMORY_HOURS * 3_600_000,
      settings.PAYMENT_PROVIDER_TIMEOUT_MS,
      providerWorld,
      providerWorld ? providerDraws : undefined,
    );
    this.bus = new SimBus(world, random.fork(), {
      lockMs: settings.SERVICEBUS_LOCK_DURATION_SECONDS * 1000,
      maxAutoLockRenewalMs: 300_000,
      maxDeliveryCount: settings.SERVICEBUS_MAX_DELIVERY_COUNT,
      duplicateDetectionMs: 10 * 60_000,
      lockLostRate: rates['sb-lock-lost'],
      hostCrashRate: rates['sb-host-crash'],
      resubmit: rates['sb-resubmit'] > 0,
    });
    const telemetry = this.telemetry.telemetry;
    const consumer = new PaymentsConsumer({
      store: this.store,
      parking: { park: async () => undefined } as unknown as ParkingStore,
      telemetry,
      clock: world,
      sleep: (ms) => world.sleep(ms),
      waitBudgetMs: waitBudgetMsOf(settings),
      design: 'handoff',
      retry: retryBudgetOf(settings),
      provider: providerCapabilityOf(settings),
    });
    this.bus.trigger = makePaymentsHandler({
      consumer: () => consumer,
      telemetry: () => telemetry,
      workflow: () => triggerWorkflow(new DurableChargeWorkflow(this.client.asDurableClient(), { sleep: (ms) => world.sleep(ms) }), mutation),
      rideOut: paymentsRideOutPlan(settings),
      nowMs: () => world.nowMs(),
      sleep: (ms) => world.sleep(ms),
    });
    this.hub.functions = {
      orchestrator: chargePaymentOrchestrator,
      activities: simActivities(
        { world, store: this.store, provider: this.provider, telemetry: this.telemetry, settings, fenceRefusals: this.fenceRefusals },
        mutation,
      ),
    };
    this.steps = new StepJudge(this);
    this.table = simTableClient(this.store, random.fork(), {
      partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
      retentionMs: this.retentionMs,
      emptyPages: () => rates['table-empty-page'] > 0,
    });
    this.bus.crashes = random.fork(); // the last fork: the other parts' draws stay as they were
    this.store.onWrite = () => this.steps.afterWrite();
    this.hub.onFinal = (instance) => this.steps.afterRun(instance);
    this.hub.onPurge = (instanceId) => {
      const why = this.aliveForPurge(instanceId);
      if (why) this.purgedWhileLive.push(`${instanceId.slice(0, 30)}: purged while ${why}`);
    };
  }

  /** What still needs an instance or entity about to be purged, if anything. */
  private aliveForPurge(instanceId: string): string | undefined {
    const entityPrefix = '@paymentcharge@';
    const entityKey = instanceId.startsWith(entityPrefix) ? instanceId.slice(entityPrefix.length) : instanceId.slice('payment-'.length);
    const record = this.store.inner.records().find((r) => chargeEntityKey(r.recordId, r.createdAtMs, r.digest) === entityKey);
    if (record) return `its record (${record.key}, ${record.status}) exists`;
    const run = this.hub.instances.get(chargeInstanceId(entityKey));
    if (run && ['Pending', 'Running', 'Suspended'].includes(run.status)) return `its run is ${run.status}`;
    return undefined;
  }

  /** The faults stop (the quiet phase): what is broken (a suspended run, a dead letter) stays as it is. */
  quiet(): void {
    for (const part of [this.store, this.hub, this.client, this.provider, this.bus]) part.quiet();
  }

  /** The instance id of a record's lifetime. */
  instanceIdOf(record: { recordId: string; createdAtMs: number; digest: string }): string {
    return chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
  }

  /** Notes the payments whose record is completed now (called each tick). */
  observe(): void {
    for (const r of this.store.inner.records()) if (r.consumer === PAYMENTS_CONSUMER && r.status === 'COMPLETED') this.completedOnce.set(r.key, r.result);
  }

  /** The instance id of the payment's current record (its lifetime), if it has one. */
  instanceOf(paymentId: string): string | undefined {
    const record = this.store.inner.records().find((r) => r.consumer === PAYMENTS_CONSUMER && r.key === paymentId);
    return record && chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
  }

  /** One expiry timer tick, the payments parts in the app's order (`expiryTimerFromSettings`), within its budget. */
  async tick(): Promise<void> {
    const { world, settings } = this;
    const budgetMs = settings.EXPIRY_SWEEP_BUDGET_SECONDS * 1000;
    const startedMs = world.nowMs();
    const left = () => Math.max(0, budgetMs - (world.nowMs() - startedMs));
    this.sweep();
    const telemetry = this.telemetry.telemetry;
    try {
      const client = this.client.asDurableClient();
      const reconciled = await reconcileOn({
        // The app's own query (its OData filter, partition by partition, page by page) against the simulated rows.
        records: (lapsedBeforeMs) =>
          lapsedInProgressRecords(this.table, {
            consumer: PAYMENTS_CONSUMER,
            partitionCount: settings.IDEMPOTENCY_PARTITION_COUNT,
            lapsedBeforeMs,
            position: this.reconcilePosition,
          }),
        client,
        store: this.store,
        settings,
        telemetry,
        clock: world,
        budgetMs: tickShares(budgetMs).reconcileMs(left()),
        sleep: (ms) => world.sleep(ms),
        keepAlive: async (records) => {
          for (const r of records) this.store.inner.hold(keyFromMessageId(PAYMENTS_CONSUMER, r.key), redeliveryWindow(settings).totalMs);
        },
      });
      if (reconciled.resolved.length > 0) world.log(`timer: reconciler restarted ${reconciled.resolved.map((r) => `${r.paymentId} (${r.reason})`).join(', ')}`);
      const purged = await purgeDurableRecords(client, {
        cutoffMs: world.nowMs() - retentionMsOf(settings),
        budgetMs: left(),
        clock: world,
        recordLive: recordLiveIn(this.store),
        http: this.client.fetch,
      });
      if (purged.orchestrations + purged.entities > 0 || purged.pages > 1)
        world.log(`timer: purge ${purged.orchestrations} run(s), ${purged.entities} entit(ies), ${purged.keptLive} kept, ${purged.pages} page(s)`);
    } catch (error) {
      world.log(`timer: tick failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 200));
    }
  }

  /** The expiry sweep: records past retention, except those whose message is dead-lettered (the hold). */
  private sweep(): void {
    const held = this.bus.deadLettered();
    // The hold pass first (ExpirySweeper's `holds`, `holdMs` = the redelivery window): a held record's retention moves on.
    const holdMs = redeliveryWindow(this.settings).totalMs;
    for (const paymentId of held) this.store.inner.hold(keyFromMessageId(PAYMENTS_CONSUMER, paymentId), holdMs);
    const live = (paymentId: string, status: string) => {
      const instanceId = this.instanceOf(paymentId);
      const run = instanceId ? this.hub.instances.get(instanceId) : undefined;
      // A completed record is final: a run still going (suspended after its write, say) has nothing left to do with it.
      if (status !== 'COMPLETED' && run && ['Pending', 'Running', 'Suspended'].includes(run.status)) return `run ${run.status}`;
      if (this.bus.messages.some((m) => m.messageId === paymentId && (m.state === 'active' || m.state === 'locked'))) return 'message in the queue';
      return undefined;
    };
    const deleted = this.store.inner.deleteExpired((record) => {
      if (held.has(record.key)) return true;
      const alive = live(record.key, record.status);
      if (alive) this.sweptWhileLive.push(`${record.key}: swept while its ${alive}`);
      return false;
    });
    if (deleted > 0) this.world.log(`timer: sweep deleted ${deleted} record(s)`);
  }

  /** Keys an operator retried (a failed payment: `payments:retry`, which reopens it). */
  readonly retried = new Map<string, number>();

  /** The operator's retry through the app's command (operatorRetry.ts). */
  operatorRetry(paymentId: string, checkedAtProvider: boolean): Promise<void> {
    return operatorRetry(this, paymentId, checkedAtProvider);
  }

  /** The record of a payment now. */
  record(paymentId: string) {
    return this.store.inner.records().find((r) => r.key === keyFromMessageId(PAYMENTS_CONSUMER, paymentId).key && r.consumer === PAYMENTS_CONSUMER);
  }
}
