import type { TableClient } from '@azure/data-tables';
import { systemClock, type Clock } from 'azure-functions-idempotency/internal';
import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../../src/payments/chargeEntity';
import { chargeOrchestration, type ChargeOrchestrationInput, type ChargeSteps } from '../../src/payments/chargeOrchestration';
import type { ChargeWorkflow, WorkflowStatus } from '../../src/payments/ChargeWorkflow';
import type { CompleteRecordInput } from '../../src/payments/completeRecord';
import type { ChargeAndRecordInput } from '../../src/app/durableCharge';
import type { ChargeResult } from '../../src/payments/schema';

/** A step of a run, as the local executor sees it. */
type LocalTask =
  | { readonly kind: 'entity'; readonly entityKey: string; readonly operation: ChargeEntityOperation }
  | { readonly kind: 'activity'; readonly input: ChargeAndRecordInput }
  | { readonly kind: 'record'; readonly input: CompleteRecordInput }
  | { readonly kind: 'timer'; readonly atMs: number };

/** Where a crash can be injected into a run (the run stops there, as if its host died). */
export type RunStep = 'entity:begin' | 'activity:charge' | 'after-activity:charge' | 'entity:complete' | 'entity:fail';

export interface LocalChargeWorkflowOptions {
  /** Table holding entity states and instance statuses (Durable keeps both in storage too). */
  readonly table: TableClient;
  /**
   * The `chargeProvider` activity (one call: the run retries it). Handoff version 2 passes `recordClaim`: the
   * activity then writes the record once and answers a `RecordedCharge` (the app's `chargeProviderActivity`).
   */
  readonly chargeProvider: (input: ChargeAndRecordInput) => Promise<unknown>;
  /**
   * Holding design: the run's provider retries (attempts in all, first interval, doubling), set on each run's input
   * as `providerRetry` (short ones for tests; the app's runs use `PROVIDER_RETRY`). Default 3 attempts, 50 ms.
   */
  readonly retry?: { readonly maxAttempts: number; readonly firstRetryIntervalMs: number };
  /** Called before each step; return true to crash the run there. */
  readonly crashBefore?: (step: RunStep, instanceId: string) => boolean;
  /** After a crash the run is replayed from its start after this delay (a host restart). */
  readonly restartDelayMs?: number;
  readonly clock?: Clock;
  /** Handoff design: the `completePaymentRecord` activity (the app's `completeRecord` on the consumer's store). */
  readonly completeRecord?: (input: CompleteRecordInput) => Promise<unknown>;
}

class InjectedCrash extends Error {}

/**
 * An in-process executor for the app's charge orchestration and `paymentCharge` entity, for
 * tests and the demo only (Azure runs Durable Functions). Semantics kept from Durable:
 * - entity operations on one key run one at a time; entity state persists (in the table);
 * - one run per instance id at a time; `start` on a running instance does nothing;
 * - activities are at-least-once: a crashed run is replayed from its start after a restart
 *   delay, calling the provider again (with the same `Idempotency-Key`);
 * - an activity is one call: the run retries failed provider calls itself (timers, `lookUpFirst`);
 * - the steps are the app's (`chargePaymentOrchestrator`): `chargeAndRecord` is the `chargeProvider` activity with the
 *   record's claim, and `signalEntity` is one-way (nothing answered; ordered per entity, as all its operations), so a
 *   handoff run takes the same version 2 path as in Azure. test/durable/realEngine.differential.test.ts compares its
 *   outcomes with the real engine's on the same scripted runs.
 */
export class LocalChargeWorkflow implements ChargeWorkflow {
  private readonly entityQueues = new Map<string, Promise<unknown>>();
  private readonly running = new Set<string>();
  private readonly pending = new Set<Promise<void>>();
  private stopped = false;
  readonly counters = { runs: 0, crashes: 0, activityCalls: 0, recordCalls: 0, lostSignals: 0 };
  private readonly clock: Clock;

  constructor(private readonly options: LocalChargeWorkflowOptions) {
    this.clock = options.clock ?? systemClock;
  }

  async status(instanceId: string): Promise<WorkflowStatus> {
    const entity = await this.readRow('instance', instanceId);
    if (!entity) return { state: 'none' };
    const state = String(entity.state);
    if (state === 'completed') return { state: 'completed', output: JSON.parse(String(entity.outputJson)) as ChargeResult };
    if (state === 'failed') return { state: 'failed', reason: String(entity.reason) };
    return { state: 'running' };
  }

  async start(instanceId: string, input: ChargeOrchestrationInput): Promise<'started' | 'running'> {
    if (this.running.has(instanceId)) return 'running';
    this.running.add(instanceId);
    await this.options.table.upsertEntity({ partitionKey: 'instance', rowKey: instanceId, state: 'running', inputJson: JSON.stringify(input) }, 'Replace');
    this.track(this.run(instanceId, input));
    return 'started';
  }

  /** Waits until no run is active (crashed runs included, once restarted and finished). */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Stops restarting crashed runs; active runs finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.drain();
  }

  private track(promise: Promise<void>): void {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise));
  }

  private async run(instanceId: string, input: ChargeOrchestrationInput): Promise<void> {
    this.counters.runs++;
    const steps: ChargeSteps<LocalTask> = {
      callEntity: (entityKey, operation) => ({ kind: 'entity', entityKey, operation }),
      chargeProvider: (activityInput) => ({ kind: 'activity', input: activityInput }),
      chargeAndRecord: (activityInput, claim) => ({ kind: 'activity', input: { ...activityInput, recordClaim: claim } }),
      signalEntity: (entityKey, operation) => {
        this.maybeCrash(`entity:${operation.name}` as RunStep, instanceId);
        // One-way: the run goes on at once; the operation queues behind the entity's earlier ones (drain waits for it).
        // Durable's queues keep a signal until it is applied; here a table error loses it: counted, for the tests.
        this.track(
          this.entityOperation(entityKey, operation).then(
            () => undefined,
            () => void this.counters.lostSignals++,
          ),
        );
      },
      completeRecord: (recordInput) => ({ kind: 'record', input: recordInput }),
      timer: (atMs) => ({ kind: 'timer', atMs }),
      nowMs: () => this.clock.nowMs(),
    };
    const retry = this.options.retry ?? { maxAttempts: 3, firstRetryIntervalMs: 50 };
    const providerRetry = { maxNumberOfAttempts: retry.maxAttempts, firstRetryIntervalMs: retry.firstRetryIntervalMs, backoffCoefficient: 2 };
    const generator = chargeOrchestration({ ...input, providerRetry }, steps);
    try {
      let next = generator.next();
      while (!next.done) {
        let value: unknown;
        let failure: unknown;
        let failed = false;
        try {
          value = await this.execute(next.value, instanceId);
        } catch (error) {
          if (error instanceof InjectedCrash) throw error;
          failed = true;
          failure = error;
        }
        next = failed ? generator.throw(failure) : generator.next(value);
      }
      await this.options.table.upsertEntity(
        { partitionKey: 'instance', rowKey: instanceId, state: 'completed', outputJson: JSON.stringify(next.value) },
        'Replace',
      );
      this.running.delete(instanceId);
    } catch (error) {
      if (error instanceof InjectedCrash) {
        this.counters.crashes++;
        // The instance stays "running" in storage, as after a host crash; the host replays it later.
        if (!this.stopped) {
          this.track(
            new Promise<void>((resolve) => setTimeout(resolve, this.options.restartDelayMs ?? 50)).then(() =>
              this.stopped ? undefined : this.run(instanceId, input),
            ),
          );
        } else {
          this.running.delete(instanceId);
        }
        return;
      }
      await this.options.table.upsertEntity(
        { partitionKey: 'instance', rowKey: instanceId, state: 'failed', reason: (error instanceof Error ? error.message : String(error)).slice(0, 1000) },
        'Replace',
      );
      this.running.delete(instanceId);
    }
  }

  private async execute(task: LocalTask, instanceId: string): Promise<unknown> {
    if (task.kind === 'entity') {
      this.maybeCrash(`entity:${task.operation.name}` as RunStep, instanceId);
      return this.entityOperation(task.entityKey, task.operation);
    }
    if (task.kind === 'timer') return new Promise((resolve) => setTimeout(resolve, Math.max(0, task.atMs - this.clock.nowMs())));
    if (task.kind === 'record') {
      if (!this.options.completeRecord) throw new Error('LocalChargeWorkflow: a handoff run needs the completeRecord option');
      this.counters.recordCalls++;
      return this.options.completeRecord(task.input);
    }
    this.maybeCrash('activity:charge', instanceId);
    this.counters.activityCalls++;
    const result = await this.options.chargeProvider(task.input);
    this.maybeCrash('after-activity:charge', instanceId);
    return result;
  }

  private maybeCrash(step: RunStep, instanceId: string): void {
    if (this.options.crashBefore?.(step, instanceId)) throw new InjectedCrash(`injected crash at ${step}`);
  }

  /** Runs one entity operation after the previous ones on the same key (one at a time). */
  private entityOperation(entityKey: string, operation: ChargeEntityOperation): Promise<unknown> {
    const previous = this.entityQueues.get(entityKey) ?? Promise.resolve();
    const next = previous.then(async () => {
      const row = await this.readRow('paymentCharge', entityKey);
      const state = row ? (JSON.parse(String(row.stateJson)) as ChargeEntityState) : undefined;
      const applied = applyChargeOperation(state, operation, this.clock.nowMs());
      await this.options.table.upsertEntity({ partitionKey: 'paymentCharge', rowKey: entityKey, stateJson: JSON.stringify(applied.state) }, 'Replace');
      return applied.reply;
    });
    this.entityQueues.set(
      entityKey,
      next.catch(() => undefined),
    );
    return next;
  }

  /** The entity's persisted state (for tests and the demo's report). */
  async entityState(entityKey: string): Promise<ChargeEntityState | undefined> {
    const row = await this.readRow('paymentCharge', entityKey);
    return row ? (JSON.parse(String(row.stateJson)) as ChargeEntityState) : undefined;
  }

  private async readRow(partitionKey: string, rowKey: string): Promise<Record<string, unknown> | undefined> {
    try {
      return await this.options.table.getEntity<Record<string, unknown>>(partitionKey, rowKey);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return undefined;
      throw error;
    }
  }
}
