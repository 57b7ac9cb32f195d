import { randomUUID } from 'node:crypto';
import { InvocationFailedError, type WorkerHost } from '../host/WorkerHost';
import type { DurableStore, InstanceRow, RetryState } from './DurableStore';
import {
  ActionType,
  deterministicGuid,
  EventType,
  flattenActions,
  historyEvent,
  parseOrchestrationFailure,
  retryDelayMs,
  type HistoryEvent,
  type SdkAction,
  type SdkOrchestratorState,
} from './historyEvents';

/** Where a host crash can be injected (the step's work is lost; its message is delivered again). */
export type DurableCrashPoint =
  /** The orchestrator ran, its checkpoint was not written: the next episode replays the same history. */
  | 'orchestrator'
  /** The activity ran (the provider was called), its result was not recorded: the activity runs again. */
  | 'after-activity'
  /** The entity batch ran, its state was not saved: the batch is delivered again. */
  | 'entity-batch';

export interface LocalDurableBackendOptions {
  readonly store: DurableStore;
  readonly host: WorkerHost;
  /** Called before each commit; true crashes the step there. */
  readonly crashBefore?: (point: DurableCrashPoint, instanceId: string) => boolean;
  /** Delay before a crashed step's message is delivered again (a host restart, a lapsed queue visibility timeout). */
  readonly restartDelayMs?: number;
  /** Real time a Durable timer (an activity retry's delay) takes, as a share of its nominal time: 1 = real time. */
  readonly timerScale?: number;
  /** Entity operations delivered in one batch, at most (the extension's default is larger; a batch takes what is queued). */
  readonly maxEntityBatch?: number;
}

interface EntityRequest {
  readonly id: string;
  readonly name: string;
  readonly input?: string;
  readonly parentInstanceId: string;
  /** A one-way operation (`signalEntity`): run in order, no answer sent. */
  readonly signal?: boolean;
}

/**
 * A local Durable Functions backend for the functions an app registered (captured by `WorkerHost`), for the
 * demo and tests. It does what the Durable extension and its storage provider do around the Node SDK:
 *
 * - an orchestration step ("episode") invokes the REGISTERED orchestrator (the SDK's `Orchestrator` and
 *   `TaskOrchestrationExecutor` replay it) with the trigger input the extension sends: the past history
 *   (`IsPlayed`), a new `OrchestratorStarted` and the new events, the instance's input and id; it then
 *   carries out the new actions the SDK returns (`CallActivityWithRetry`, `CallActivity`, `CallEntity`, `SignalEntity`,
 *   `CreateTimer`) and records them as `TaskScheduled`, `EventSent`, `TimerCreated` with the sequence
 *   numbers the SDK expects, in one checkpoint on Azurite (history rows + instance row);
 * - activity retries as DurableTask.Core's RetryInterceptor runs them: a `TaskFailed` is followed by a
 *   `TimerCreated`/`TimerFired` of the computed delay (also after the last attempt), then by a new
 *   `TaskScheduled` while attempts remain;
 * - entity operations are queued per entity and delivered to the REGISTERED entity in batches (the SDK's
 *   `Entity` dispatcher): `{ self, exists, state, batch: [{ id, name, signal, input }] }`; the state it
 *   returns is saved after the batch, whatever an operation threw; each result goes back to its
 *   orchestration as an `EventRaised` named by the request id;
 * - a crash at a step loses that step's work only; its message is delivered again and the orchestration
 *   replays from its committed history.
 * Queues are in memory (messages survive an injected crash, as a queue message survives a host's death).
 */
export class LocalDurableBackend {
  private readonly inboxes = new Map<string, HistoryEvent[]>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly entityQueues = new Map<string, EntityRequest[]>();
  private readonly entityRunning = new Map<string, Promise<void>>();
  private readonly pending = new Set<Promise<unknown>>();
  private stopped = false;
  readonly counters = { episodes: 0, replayedEvents: 0, activityCalls: 0, entityBatches: 0, entityOperations: 0, crashes: 0, timers: 0 };

  constructor(private readonly options: LocalDurableBackendOptions) {}

  get store(): DurableStore {
    return this.options.store;
  }

  /** Starts (or restarts, when final) an instance; false when one is pending or running (the client then gets an error). */
  async start(name: string, instanceId: string, inputJson: string): Promise<boolean> {
    const executionId = randomUUID().replace(/-/g, '');
    if (!(await this.store.create(instanceId, name, inputJson, executionId, new Date().toISOString()))) return false;
    this.deliver(
      instanceId,
      historyEvent(EventType.ExecutionStarted, -1, {
        Name: name,
        Input: inputJson,
        OrchestrationInstance: { InstanceId: instanceId, ExecutionId: executionId },
      }),
    );
    return true;
  }

  /** Waits until nothing is in flight. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Stops delivering crashed steps again and waits for the rest. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.drain();
  }

  /** An entity's saved state (parsed), for reports. */
  async entityState<T>(schedulerId: string): Promise<T | undefined> {
    const row = await this.store.entity(schedulerId);
    return row.exists && row.state !== undefined ? (JSON.parse(row.state) as T) : undefined;
  }

  private track<T>(promise: Promise<T>): void {
    this.pending.add(promise);
    void promise.finally(() => this.pending.delete(promise)).catch(() => undefined);
  }

  private later(ms: number, fn: () => void): void {
    this.track(new Promise<void>((resolve) => setTimeout(resolve, ms)).then(() => (this.stopped ? undefined : fn())));
  }

  private crash(point: DurableCrashPoint, instanceId: string): boolean {
    if (!this.options.crashBefore?.(point, instanceId)) return false;
    this.counters.crashes++;
    return true;
  }

  /** Adds an event to an orchestration's inbox and runs an episode when none is running. */
  private deliver(instanceId: string, event: HistoryEvent): void {
    const inbox = this.inboxes.get(instanceId) ?? [];
    inbox.push(event);
    this.inboxes.set(instanceId, inbox);
    this.kick(instanceId);
  }

  private kick(instanceId: string): void {
    if (this.running.has(instanceId) || (this.inboxes.get(instanceId)?.length ?? 0) === 0) return;
    const run = this.episode(instanceId)
      .catch((error: unknown) => {
        // A storage error: the messages stay in the inbox and are delivered again.
        if (!this.stopped) this.later(this.options.restartDelayMs ?? 100, () => this.kick(instanceId));
        console.error(`durable: episode of ${instanceId} failed: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => {
        this.running.delete(instanceId);
        this.kick(instanceId);
      });
    this.running.set(instanceId, run);
    this.track(run);
  }

  /** One orchestration step: replay + new events through the registered orchestrator, then one checkpoint. */
  private async episode(instanceId: string): Promise<void> {
    const inbox = this.inboxes.get(instanceId) ?? [];
    const taken = inbox.slice();
    const row = await this.store.instance(instanceId);
    if (!row || row.runtimeStatus === 'Completed' || row.runtimeStatus === 'Failed' || row.runtimeStatus === 'Terminated') {
      inbox.splice(0, taken.length); // late events of a finished instance are dropped, as the extension does
      return;
    }
    const past = await this.store.history(row);
    const started = taken.filter((e) => e.EventType === EventType.ExecutionStarted);
    if (past.length === 0 && started.length === 0) return; // events before the start: wait for it
    const now = Date.now();
    const newEvents: HistoryEvent[] = [historyEvent(EventType.OrchestratorStarted, -1, {}, now), ...taken.map((e) => ({ ...e, IsPlayed: false }))];
    const history = [...past.map((e) => ({ ...e, IsPlayed: true })), ...newEvents];
    this.counters.episodes++;
    this.counters.replayedEvents += past.length;

    let state: SdkOrchestratorState;
    let failure: string | undefined;
    try {
      state = (await this.options.host.invoke(row.name, { inputData: [this.orchestrationInput(row, history)] })) as SdkOrchestratorState;
    } catch (error) {
      if (!(error instanceof InvocationFailedError)) throw error;
      const parsed = parseOrchestrationFailure(error.error instanceof Error ? error.error.message : String(error.error));
      failure = parsed.error;
      state = parsed.state ?? { isDone: false, actions: [] };
    }

    const added: HistoryEvent[] = [];
    const outbox: Array<() => void> = [];
    let nextSeq = row.nextSeq;
    const retries: Record<string, RetryState> = { ...row.retries };
    // The retry interceptor reacts to the new events first (as DurableTask.Core resumes it before the new actions).
    for (const event of newEvents) {
      const seq = String(event.EventType === EventType.TimerFired ? event.TimerId : event.TaskScheduledId);
      const retry = retries[seq];
      if (!retry) continue;
      if (event.EventType === EventType.TaskFailed && retry.waitingOn === 'task') {
        delete retries[seq];
        const delay = retryDelayMs(retry.options, retry.attempt - 1, now - retry.firstAttemptAtMs);
        if (delay <= 0) continue;
        const timerSeq = nextSeq++;
        added.push(historyEvent(EventType.TimerCreated, timerSeq, { FireAt: new Date(now + delay).toISOString() }, now));
        retries[String(timerSeq)] = { ...retry, waitingOn: 'timer' };
        outbox.push(() => this.timer(instanceId, timerSeq, now + delay, delay));
      } else if (event.EventType === EventType.TimerFired && retry.waitingOn === 'timer') {
        delete retries[seq];
        if (retry.attempt >= retry.options.maxNumberOfAttempts) continue;
        const taskSeq = nextSeq++;
        added.push(historyEvent(EventType.TaskScheduled, taskSeq, { Name: retry.functionName, Input: retry.inputJson }, now));
        retries[String(taskSeq)] = { ...retry, attempt: retry.attempt + 1, waitingOn: 'task' };
        outbox.push(() => this.activity(instanceId, retry.functionName, taskSeq, retry.inputJson));
      }
    }
    const actions = flattenActions(state);
    for (const action of actions.slice(row.actionsDone)) {
      const seq = nextSeq++;
      const scheduled = this.schedule(instanceId, row, action, seq, now, retries, outbox);
      if (typeof scheduled === 'string') {
        failure ??= scheduled;
        break;
      }
      added.push(scheduled);
    }

    let runtimeStatus: InstanceRow['runtimeStatus'] = row.runtimeStatus === 'Pending' ? 'Running' : row.runtimeStatus;
    let outputJson = row.outputJson;
    if (failure !== undefined) {
      runtimeStatus = 'Failed';
      outputJson = JSON.stringify(failure);
      added.push(historyEvent(EventType.ExecutionFailed, -1, { Reason: failure }, now));
    } else if (state.isDone) {
      runtimeStatus = 'Completed';
      outputJson = JSON.stringify(state.output ?? null);
      added.push(historyEvent(EventType.ExecutionCompleted, -1, { Result: outputJson }, now));
    }
    if (this.crash('orchestrator', instanceId)) {
      // The host died before its checkpoint: the messages stay queued; after a restart the episode replays.
      await sleep(this.options.restartDelayMs ?? 100);
      return;
    }
    const committed = [...newEvents, ...added, historyEvent(EventType.OrchestratorCompleted, -1, {}, now)];
    await this.store.checkpoint(
      row,
      {
        ...row,
        runtimeStatus,
        outputJson,
        lastUpdatedTime: new Date(now).toISOString(),
        historyLength: row.historyLength + committed.length,
        actionsDone: Math.max(row.actionsDone, actions.length),
        nextSeq,
        retries,
      },
      committed,
    );
    inbox.splice(0, taken.length);
    for (const send of outbox) send();
  }

  /** The orchestration trigger's data as the extension sends it (a JSON string the worker parses). */
  private orchestrationInput(row: InstanceRow, history: HistoryEvent[]) {
    return {
      name: this.options.host.bindingName(row.name, 'orchestrationTrigger'),
      data: {
        string: JSON.stringify({
          history,
          input: JSON.parse(row.inputJson) as unknown,
          instanceId: row.instanceId,
          isReplaying: history.some((e) => e.IsPlayed),
          parentInstanceId: null,
          upperSchemaVersion: 2,
          upperSchemaVersionNew: 3,
          longRunningTimerIntervalDuration: '3.00:00:00',
          maximumShortTimerDuration: '6.00:00:00',
          defaultHttpAsyncRequestSleepTimeMillseconds: 30_000,
        }),
      },
    };
  }

  /** Carries out one new action: its history event, and (after the checkpoint) its message. A string is an unsupported action. */
  private schedule(
    instanceId: string,
    row: InstanceRow,
    action: SdkAction,
    seq: number,
    now: number,
    retries: Record<string, RetryState>,
    outbox: Array<() => void>,
  ): HistoryEvent | string {
    switch (action.actionType) {
      case ActionType.CallActivity:
      case ActionType.CallActivityWithRetry: {
        const name = String(action.functionName);
        const inputJson = JSON.stringify(action.input ?? null);
        if (action.actionType === ActionType.CallActivityWithRetry && action.retryOptions) {
          retries[String(seq)] = { functionName: name, inputJson, options: action.retryOptions, attempt: 1, waitingOn: 'task', firstAttemptAtMs: now };
        }
        outbox.push(() => this.activity(instanceId, name, seq, inputJson));
        return historyEvent(EventType.TaskScheduled, seq, { Name: name, Input: inputJson }, now);
      }
      case ActionType.CallEntity:
      case ActionType.SignalEntity: {
        const target = String(action.instanceId);
        const signal = action.actionType === ActionType.SignalEntity;
        const request: EntityRequest = {
          id: deterministicGuid(`${instanceId}\n${row.executionId}\n${seq}`),
          name: String(action.operation),
          input: action.input === undefined ? undefined : JSON.stringify(action.input),
          parentInstanceId: instanceId,
          signal,
        };
        outbox.push(() => this.entityRequest(target, request));
        const message = { id: request.id, op: request.name, signal, input: request.input, parent: instanceId, parentExecution: row.executionId };
        return historyEvent(EventType.EventSent, seq, { InstanceId: target, Name: 'op', Input: JSON.stringify(message) }, now);
      }
      case ActionType.CreateTimer: {
        const fireAtMs = Date.parse(String(action.fireAt));
        outbox.push(() => this.timer(instanceId, seq, fireAtMs, fireAtMs - now));
        return historyEvent(EventType.TimerCreated, seq, { FireAt: new Date(fireAtMs).toISOString() }, now);
      }
      default:
        return `the local Durable backend does not support action type ${action.actionType}`;
    }
  }

  private timer(instanceId: string, seq: number, fireAtMs: number, delayMs: number): void {
    this.counters.timers++;
    const realMs = Math.max(0, Math.round(delayMs * (this.options.timerScale ?? 1)));
    this.later(realMs, () => this.deliver(instanceId, historyEvent(EventType.TimerFired, -1, { TimerId: seq, FireAt: new Date(fireAtMs).toISOString() })));
  }

  /** Runs the registered activity (at least once: a crash after it ran runs it again). */
  private activity(instanceId: string, name: string, seq: number, inputJson: string): void {
    const run = async (): Promise<void> => {
      this.counters.activityCalls++;
      let event: HistoryEvent;
      try {
        const result = await this.options.host.invoke(name, {
          inputData: [{ name: this.options.host.bindingName(name, 'activityTrigger'), data: { string: inputJson } }],
        });
        event = historyEvent(EventType.TaskCompleted, -1, { TaskScheduledId: seq, Result: JSON.stringify(result ?? null) });
      } catch (error) {
        if (!(error instanceof InvocationFailedError)) throw error;
        const cause = error.error instanceof Error ? error.error : new Error(String(error.error));
        // The extension's TaskFailureException for an out-of-process activity: the worker's failure text, then the stack.
        event = historyEvent(EventType.TaskFailed, -1, {
          TaskScheduledId: seq,
          Reason: `Activity function '${name}' failed: Result: Failure\nException: ${cause.message}`,
          Details: JSON.stringify({ message: cause.message, stack: cause.stack }),
        });
      }
      if (this.crash('after-activity', instanceId)) {
        this.later(this.options.restartDelayMs ?? 100, () => this.activity(instanceId, name, seq, inputJson));
        return;
      }
      this.deliver(instanceId, event);
    };
    this.track(run());
  }

  private entityRequest(schedulerId: string, request: EntityRequest): void {
    const queue = this.entityQueues.get(schedulerId) ?? [];
    queue.push(request);
    this.entityQueues.set(schedulerId, queue);
    this.kickEntity(schedulerId);
  }

  private kickEntity(schedulerId: string): void {
    if (this.entityRunning.has(schedulerId) || (this.entityQueues.get(schedulerId)?.length ?? 0) === 0) return;
    const run = this.entityBatch(schedulerId)
      .catch((error: unknown) => {
        if (!this.stopped) this.later(this.options.restartDelayMs ?? 100, () => this.kickEntity(schedulerId));
        console.error(`durable: entity batch of ${schedulerId} failed: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => {
        this.entityRunning.delete(schedulerId);
        this.kickEntity(schedulerId);
      });
    this.entityRunning.set(schedulerId, run);
    this.track(run);
  }

  /** One batch of queued operations through the registered entity; the state it leaves is saved, then the results are sent. */
  private async entityBatch(schedulerId: string): Promise<void> {
    const queue = this.entityQueues.get(schedulerId) ?? [];
    const batch = queue.slice(0, this.options.maxEntityBatch ?? 20);
    const at = schedulerId.indexOf('@', 1);
    const self = { name: schedulerId.slice(1, at), key: schedulerId.slice(at + 1) };
    const functionName = [...this.options.host.registrations.keys()].find((n) => n.toLowerCase() === self.name) ?? self.name;
    const saved = await this.store.entity(schedulerId);
    const trigger = {
      self,
      exists: saved.exists,
      state: saved.state,
      batch: batch.map((r) => ({ id: r.id, name: r.name, signal: r.signal === true, input: r.input })),
    };
    this.counters.entityBatches++;
    this.counters.entityOperations += batch.length;
    const result = (await this.options.host.invoke(functionName, {
      inputData: [{ name: this.options.host.bindingName(functionName, 'entityTrigger'), data: { string: JSON.stringify(trigger) } }],
    })) as { entityExists: boolean; entityState?: string; results: Array<{ isError: boolean; result?: string }> };
    if (this.crash('entity-batch', schedulerId)) {
      // The host died before saving the batch: nothing of it counts; the batch is delivered again after a restart.
      await sleep(this.options.restartDelayMs ?? 100);
      return;
    }
    await this.store.saveEntity(schedulerId, saved, result.entityExists, result.entityExists ? result.entityState : undefined);
    queue.splice(0, batch.length);
    batch.forEach((request, i) => {
      if (request.signal) return;
      const r = result.results[i];
      const response = r?.isError
        ? { result: JSON.stringify(`operation '${request.name}' of entity ${schedulerId} failed: ${r.result ?? ''}`), exceptionType: 'System.Exception' }
        : { result: r?.result };
      this.deliver(request.parentInstanceId, historyEvent(EventType.EventRaised, -1, { Name: request.id, Input: JSON.stringify(response) }));
    });
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
