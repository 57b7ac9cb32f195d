import { applyChargeOperation, type ChargeEntityOperation, type ChargeEntityState } from '../../src/payments/chargeEntity';
import { replayRun } from './hubReplay';
import { VISIBILITY_MS, emptyHistory, short, type HistoryResult, type HubFaults, type HubFunctions, type HubTask, type Instance } from './hubTypes';
import { CHARGE_ENTITY } from '../../src/app/durableCharge';
import type { Random } from './random';
import type { World } from './world';

export { short } from './hubTypes';
export { VISIBILITY_MS, type HubFaults, type HubFunctions, type HubStatus, type HubTask, type Instance } from './hubTypes';

/**
 * Durable Functions on the Azure Storage provider, as the simulator needs it: instances with their history, replayed
 * from the start at each episode (the app's orchestrator over a context whose `callEntity`/`callActivity`/
 * `createTimer`/`signalEntity` return task descriptions), the `paymentCharge` entities (operations one at a time,
 * de-duplicated by request id), activities at least once, durable timers, and the queue waits between them. Faults:
 * waits of minutes to hours, a worker that dies in an activity (it runs again after the visibility timeout), a host
 * that dies after an episode sent its messages and before it wrote history (the episode runs again and sends them
 * again), a duplicate start that keeps the first input, late timers.
 */
export class SimTaskHub {
  readonly instances = new Map<string, Instance>();
  /** The `paymentCharge` entities: state, the request ids seen, the time of the last operation (for `hub-bounded`). */
  readonly entities = new Map<string, { state?: ChargeEntityState; seen: Set<string>; lastOpMs?: number }>();
  /** Counts for the cost figures. */
  readonly counts = { episodes: 0, activities: 0, entityOps: 0, continuedAsNew: 0 };
  /** The longest history one execution held (tasks answered), and whose: `history-bounded` reads it. */
  longestHistory = { tasks: 0, instanceId: '' };
  functions?: HubFunctions;
  /** A scenario's forced fault: activity work items sent at or after `fromMs` wait `waitMs` in the queue. */
  forceActivityWait?: { readonly fromMs: number; readonly waitMs: number; count?: number };
  /** A scenario's forced faults: the next `n` episodes that send an activity (an entity call) die after sending, before their history. */
  forceRestartOnActivity = 0;
  forceRestartOnEntity = 0;
  /** Starts the provider accepted and dropped (check-then-act): the instance and the attempt its input carried. */
  readonly droppedStarts: Array<{ readonly instanceId: string; readonly attempt: unknown }> = [];
  /** A scenario's forced faults: the next start's first episode waits `forceStartWaitMs`; the next `n` starts of a pending instance are dropped. */
  forceStartWaitMs?: number;
  forceDuplicateStart = 0;
  /** Told when a run reaches a final status (the invariants judge it at that step). */
  onFinal?: (instance: Instance) => void;
  /** A scenario's hook at an activity's start and answer; `again` runs the work item again after `delayMs` (a failed delete). */
  activityHook?: (at: 'start' | 'answered', name: string, input: unknown, again: (delayMs: number) => void) => void;
  /** Activity executions as they start (name, run, time): scenarios check their premise with them. */
  readonly activityRuns: Array<{ readonly instanceId: string; readonly name: string; readonly atMs: number }> = [];
  /** Told before anything is purged (the invariants check what was still alive). */
  onPurge?: (instanceId: string) => void;

  constructor(
    private readonly world: World,
    private readonly random: Random,
    private readonly faults: HubFaults,
  ) {}

  /** No more faults (the schedule's quiet phase). */
  quiet(): void {
    Object.assign(this.faults, { queueWait: 0, activityCrash: 0, hostRestart: 0, duplicateStart: 0, timerLate: 0, redeliverAnswered: 0 });
  }

  /** A queue hop: milliseconds to seconds, or (a fault) minutes to hours. */
  private hopMs(): number {
    return this.random.chance(this.faults.queueWait) ? this.random.logBetween(60_000, 6 * 3_600_000) : this.random.logBetween(5, 2_000);
  }

  /** `startNew`: a new execution unless one is pending or running (then the extension refuses: 409). */
  start(instanceId: string, input: unknown): void {
    const existing = this.instances.get(instanceId);
    if (existing && (existing.status === 'Pending' || existing.status === 'Running' || existing.status === 'Suspended')) {
      const forced = existing.status === 'Pending' && this.forceDuplicateStart > 0;
      if (forced) this.forceDuplicateStart--;
      if (existing.status === 'Pending' && (forced || this.random.chance(this.faults.duplicateStart))) {
        this.world.log(`hub: duplicate start of ${short(instanceId)} accepted, its input dropped (check-then-act)`);
        this.droppedStarts.push({ instanceId, attempt: (input as { attempt?: unknown } | undefined)?.attempt });
        return;
      }
      throw new Error(`An orchestration with instance ID '${instanceId}' already exists (HTTP 409)`);
    }
    const instance: Instance = {
      id: instanceId,
      status: 'Pending',
      input,
      createdMs: this.world.nowMs(),
      execution: (existing?.execution ?? 0) + 1,
      ...emptyHistory(),
      held: [],
    };
    this.instances.set(instanceId, instance);
    this.world.log(`hub: start ${short(instanceId)} execution ${instance.execution}`);
    this.enqueueEpisode(instance, instance.execution, this.forceStartWaitMs ?? this.hopMs());
    this.forceStartWaitMs = undefined;
  }

  private enqueueEpisode(instance: Instance, execution: number, delayMs = this.hopMs()): void {
    this.world.at(this.world.nowMs() + delayMs, () => this.episode(instance.id, execution));
  }

  /** One orchestrator work item: replay the history, then act on what the run does next. */
  private episode(instanceId: string, execution: number): void {
    const instance = this.instances.get(instanceId);
    if (!instance || instance.execution !== execution) return;
    if (instance.status === 'Suspended') {
      instance.held.push(() => this.episode(instanceId, execution));
      return;
    }
    if (instance.status !== 'Pending' && instance.status !== 'Running') return;
    this.counts.episodes++;
    const now = this.world.nowMs();
    const startedMs = instance.startedMs ?? now;
    // Results an episode took in and died before writing are new events again: this episode's time (OrchestratorStarted).
    for (let n = instance.committed; n < instance.results.length; n++) instance.results[n] = { ...instance.results[n], episodeMs: now };
    const replay = replayRun(this.functions!, instance, startedMs);
    const newSignals = replay.signals.slice(instance.signals);
    const task = replay.next && replay.taskIndex >= instance.scheduled ? replay.next : undefined;
    const send = () => {
      for (const [offset, signal] of newSignals.entries())
        this.sendToEntity(instance, `s${instance.signals + offset}`, signal.entityKey, signal.operation, signal.sentAtMs);
      if (task) this.dispatch(instance, execution, replay.taskIndex, task);
    };
    const forced = task?.kind === 'activity' ? 'forceRestartOnActivity' : task?.kind === 'entity' ? 'forceRestartOnEntity' : undefined;
    const forcedRestart = forced !== undefined && this[forced] > 0;
    if (forcedRestart) this[forced]--;
    if (forcedRestart || this.random.chance(this.faults.hostRestart)) {
      // The provider sends the episode's messages before it writes its history: a crash between sends them again.
      send();
      this.world.log(`hub: host restart after ${short(instanceId)} sent its messages, before its history`);
      this.enqueueEpisode(instance, execution, VISIBILITY_MS + this.hopMs());
      return;
    }
    instance.startedMs = startedMs;
    if (instance.status === 'Pending') instance.status = 'Running';
    send();
    instance.committed = instance.results.length;
    instance.signals = replay.signals.length;
    if (task) instance.scheduled = replay.taskIndex + 1;
    if (replay.done && replay.continued !== undefined) {
      // continueAsNew: a new execution with the new input and an empty history (messages of the old one are dropped).
      Object.assign(instance, { input: replay.continued.input, execution: execution + 1, startedMs: undefined, ...emptyHistory() });
      this.counts.continuedAsNew++;
      this.world.log(`hub: ${short(instanceId)} continued as new (execution ${instance.execution})`);
      this.enqueueEpisode(instance, instance.execution);
    } else if (replay.done) {
      instance.status = replay.failed === undefined ? 'Completed' : 'Failed';
      instance.output = replay.failed ?? replay.output;
      this.world.log(`hub: ${short(instanceId)} ${instance.status}${replay.failed ? `: ${replay.failed}` : ''}`);
      this.onFinal?.(instance);
    }
  }

  /** A task's result reaches the run's control queue; the next episode takes it in (a duplicate is dropped). */
  private deliver(instance: Instance, execution: number, taskIndex: number, result: Omit<HistoryResult, 'episodeMs'>): void {
    this.world.at(this.world.nowMs() + this.hopMs(), () => {
      if (instance.execution !== execution || instance.results.length !== taskIndex) return;
      if (instance.status === 'Suspended') {
        instance.held.push(() => this.deliver(instance, execution, taskIndex, result));
        return;
      }
      // Pending: the run's start message is not processed yet (a host died in its first episode): the answer waits behind it.
      if (instance.status === 'Pending') return this.deliver(instance, execution, taskIndex, result);
      if (instance.status !== 'Running') return;
      instance.results.push({ ...result, episodeMs: this.world.nowMs() });
      if (instance.results.length > this.longestHistory.tasks) this.longestHistory = { tasks: instance.results.length, instanceId: instance.id };
      this.episode(instance.id, execution);
    });
  }

  private dispatch(instance: Instance, execution: number, taskIndex: number, task: HubTask): void {
    if (task.kind === 'timer') {
      const lateMs = this.random.chance(this.faults.timerLate) ? this.random.logBetween(1_000, 2 * 3_600_000) : 0;
      this.world.at(task.atMs + lateMs, () => this.deliver(instance, execution, taskIndex, { ok: true }));
    } else if (task.kind === 'entity') {
      // The run waits for the answer to the request it sent last (a re-run episode's has a new id): an answer to an
      // earlier copy of the request matches nothing the run waits for and is dropped.
      const requestId = this.sendToEntity(instance, `c${taskIndex}`, task.entityKey, task.operation, task.sentAtMs, (reply, id) => {
        if (instance.awaiting.get(taskIndex) === id) this.deliver(instance, execution, taskIndex, { ok: true, value: reply });
      });
      instance.awaiting.set(taskIndex, requestId);
    } else {
      const wait = this.forceActivityWait;
      const forced = wait && this.world.nowMs() >= wait.fromMs && (wait.count === undefined || wait.count > 0) ? wait.waitMs : undefined;
      if (forced !== undefined && wait?.count !== undefined) wait.count--;
      if (forced !== undefined)
        this.world.log(`hub: activity ${task.name} of ${short(instance.id)} waits ${(forced / 3_600_000).toFixed(2)} h in the work-item queue`);
      const sentMs = this.world.nowMs();
      this.world.at(sentMs + (forced ?? this.hopMs()), () => void this.runActivity(instance, execution, taskIndex, task, sentMs));
    }
  }

  /** An activity work item: at least once (a worker that dies runs it again after the visibility timeout). */
  private async runActivity(
    instance: Instance,
    execution: number,
    taskIndex: number,
    task: Extract<HubTask, { kind: 'activity' }>,
    sentMs: number,
  ): Promise<void> {
    const body = this.functions!.activities.get(task.name);
    if (!body) return; // no such function: the engine leaves the run waiting (azure-functions-durable-js#197)
    const crash = this.random.chance(this.faults.activityCrash) ? this.random.pick(['before', 'after'] as const) : undefined;
    const againAfter = (delayMs: number) =>
      this.world.at(this.world.nowMs() + delayMs, () => void this.runActivity(instance, execution, taskIndex, task, sentMs));
    const again = () => againAfter(VISIBILITY_MS + this.hopMs());
    if (crash === 'before') {
      this.world.log(`hub: worker died before activity ${task.name} of ${short(instance.id)}`);
      return again();
    }
    this.counts.activities++;
    this.activityRuns.push({ instanceId: instance.id, name: task.name, atMs: this.world.nowMs() });
    this.activityHook?.('start', task.name, task.input, againAfter);
    let result: Omit<HistoryResult, 'episodeMs'>;
    try {
      result = { ok: true, value: await body(structuredClone(task.input), { ageMs: this.world.nowMs() - sentMs }) };
    } catch (error) {
      result = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    if (crash === 'after') {
      this.world.log(`hub: worker died after activity ${task.name} of ${short(instance.id)} ran (its answer lost)`);
      return again();
    }
    this.deliver(instance, execution, taskIndex, result);
    this.activityHook?.('answered', task.name, task.input, againAfter);
    if (this.random.chance(this.faults.redeliverAnswered)) {
      // The answer is on its way; the work item's delete fails (abandoned: visible again after 2^n s) or the worker
      // dies before it (the visibility timeout): the same item runs again, whatever the run did with the answer.
      const delayMs = this.random.chance(0.5) ? 2 ** this.random.int(1, 6) * 1_000 : VISIBILITY_MS;
      this.world.log(`hub: activity ${task.name} of ${short(instance.id)} answered; its work item runs again in ${delayMs / 1000} s (not deleted)`);
      this.world.at(this.world.nowMs() + delayMs, () => void this.runActivity(instance, execution, taskIndex, task, sentMs));
    }
  }

  /**
   * An operation for a `paymentCharge` entity, applied in arrival order. The entity drops a request it has seen, known
   * by its id, which the sender derives from its `currentUtcDateTime` (`NewGuid`): a request a re-run episode sends
   * again carries that episode's new time, so it is a new request and applied again.
   */
  private sendToEntity(
    instance: Instance,
    requestId: string,
    entityKey: string,
    operation: ChargeEntityOperation,
    sentAtMs: number,
    reply?: (value: unknown, id: string) => void,
  ): string {
    const id = `${instance.id}#${instance.execution}#${requestId}@${sentAtMs}`;
    this.world.at(this.world.nowMs() + this.hopMs(), () => {
      const entity = this.entities.get(entityKey) ?? { seen: new Set<string>() };
      this.entities.set(entityKey, entity);
      if (entity.seen.has(id)) return;
      entity.seen.add(id);
      entity.lastOpMs = this.world.nowMs();
      this.counts.entityOps++;
      const applied = applyChargeOperation(entity.state, operation, this.world.nowMs());
      entity.state = applied.state;
      reply?.(applied.reply, id);
    });
    return id;
  }

  /**
   * The operator's `terminate`: a message on the run's control queue (ExecutionTerminated), applied by the next episode
   * that takes it in; until then the run is what it was (its status reads Running), and work it sent still runs.
   */
  terminate(instanceId: string, reason: string): void {
    const instance = this.instances.get(instanceId);
    if (!instance || !['Pending', 'Running', 'Suspended'].includes(instance.status)) return;
    const execution = instance.execution;
    this.world.log(`hub: operator asked to terminate ${short(instanceId)} (queued)`);
    this.world.at(this.world.nowMs() + this.hopMs(), () => {
      if (instance.execution !== execution || !['Pending', 'Running', 'Suspended'].includes(instance.status)) return;
      instance.status = 'Terminated';
      instance.output = reason;
      instance.held = [];
      this.world.log(`hub: ${short(instanceId)} terminated`);
    });
  }

  suspend(instanceId: string): void {
    const instance = this.instances.get(instanceId);
    if (instance?.status !== 'Running') return;
    instance.status = 'Suspended';
    this.world.log(`hub: operator suspended ${short(instanceId)}`);
  }

  resume(instanceId: string): void {
    const instance = this.instances.get(instanceId);
    if (instance?.status !== 'Suspended') return;
    instance.status = 'Running';
    this.world.log(`hub: operator resumed ${short(instanceId)}`);
    for (const held of instance.held.splice(0)) held();
  }

  /** `purgeInstanceHistory(id)`: an orchestration, or an entity (`@paymentcharge@<key>`). */
  purge(instanceId: string): number {
    this.onPurge?.(instanceId);
    const prefix = `@${CHARGE_ENTITY.toLowerCase()}@`;
    if (instanceId.startsWith(prefix)) return this.entities.delete(instanceId.slice(prefix.length)) ? 1 : 0;
    return this.instances.delete(instanceId) ? 1 : 0;
  }
}
