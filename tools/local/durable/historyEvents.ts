import { createHash } from 'node:crypto';

/**
 * History events as the Durable extension passes them to the Node SDK (durable-functions'
 * `HistoryEvent` classes: PascalCase fields, `EventType` numbers of `HistoryEventType`).
 */
export const EventType = {
  ExecutionStarted: 0,
  ExecutionCompleted: 1,
  ExecutionFailed: 2,
  TaskScheduled: 4,
  TaskCompleted: 5,
  TaskFailed: 6,
  TimerCreated: 10,
  TimerFired: 11,
  OrchestratorStarted: 12,
  OrchestratorCompleted: 13,
  EventSent: 14,
  EventRaised: 15,
} as const;

export interface HistoryEvent {
  readonly EventType: number;
  readonly EventId: number;
  IsPlayed: boolean;
  readonly Timestamp: string;
  readonly [field: string]: unknown;
}

export function historyEvent(type: number, eventId: number, fields: Record<string, unknown> = {}, nowMs = Date.now()): HistoryEvent {
  return { EventType: type, EventId: eventId, IsPlayed: false, Timestamp: new Date(nowMs).toISOString(), ...fields };
}

/** The SDK's action types (`ActionType`). */
export const ActionType = {
  CallActivity: 0,
  CallActivityWithRetry: 1,
  CreateTimer: 5,
  CallEntity: 7,
  SignalEntity: 9,
} as const;

/** An action as the SDK returns it in `OrchestratorState.actions` (JSON). */
export interface SdkAction {
  readonly actionType: number;
  readonly functionName?: string;
  readonly input?: unknown;
  readonly retryOptions?: SdkRetryOptions;
  readonly instanceId?: string;
  readonly operation?: string;
  readonly fireAt?: string;
}

/** `df.RetryOptions` as serialized in a `CallActivityWithRetry` action. */
export interface SdkRetryOptions {
  readonly firstRetryIntervalInMilliseconds: number;
  readonly maxNumberOfAttempts: number;
  readonly backoffCoefficient?: number;
  readonly maxRetryIntervalInMilliseconds?: number;
  readonly retryTimeoutInMilliseconds?: number;
}

/**
 * The delay before retry number `retryCount` (0-based), as DurableTask.Core's `RetryInterceptor`
 * computes it: first interval x coefficient^retryCount, capped by the max interval; zero (no retry)
 * once the retry timeout since the first attempt has passed.
 */
export function retryDelayMs(options: SdkRetryOptions, retryCount: number, sinceFirstAttemptMs: number): number {
  const timeout = options.retryTimeoutInMilliseconds;
  if (timeout !== undefined && timeout > 0 && sinceFirstAttemptMs >= timeout) return 0;
  const delay = options.firstRetryIntervalInMilliseconds * (options.backoffCoefficient ?? 1) ** retryCount;
  const max = options.maxRetryIntervalInMilliseconds;
  return max !== undefined && max > 0 ? Math.min(delay, max) : delay;
}

/** A deterministic GUID-shaped id (the extension derives entity request ids from the orchestration's deterministic GUIDs). */
export function deterministicGuid(name: string): string {
  const h = createHash('sha1').update(name, 'utf8').digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The orchestration state the SDK returns (or embeds after `$OutOfProcData$:` in a failure). */
export interface SdkOrchestratorState {
  readonly isDone: boolean;
  readonly actions: unknown[];
  readonly output?: unknown;
  readonly error?: string;
  readonly customStatus?: unknown;
}

const OUT_OF_PROC_LABEL = '\n\n$OutOfProcData$:';

/** Splits a failed orchestration's error message into its text and the state the SDK appended (OrchestrationFailureError). */
export function parseOrchestrationFailure(message: string): { error: string; state?: SdkOrchestratorState } {
  const at = message.indexOf(OUT_OF_PROC_LABEL);
  if (at < 0) return { error: message };
  const state = JSON.parse(message.slice(at + OUT_OF_PROC_LABEL.length)) as SdkOrchestratorState;
  // durable-functions 3.5 builds this error from a boolean (its text is "false"); the state's `error` has the orchestrator's message.
  return { error: state.error ?? message.slice(0, at), state };
}

/** Every action of the state, in order (schema V1 wraps each in its own array, V2+ has one array). */
export function flattenActions(state: SdkOrchestratorState): SdkAction[] {
  return (state.actions ?? []).flat(2) as SdkAction[];
}
