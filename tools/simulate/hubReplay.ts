import type * as df from 'durable-functions';
import type { ChargeEntityOperation } from '../../src/payments/chargeEntity';
import type { HubFunctions, HubTask, Instance } from './hubTypes';

/**
 * One episode's replay: the app's orchestrator run from the start over the run's history, over a context whose
 * `callEntity`/`callActivity`/`createTimer`/`signalEntity` return task descriptions, `currentUtcDateTime` the time of
 * the episode that took in the last result replayed; it stops at the first task without a result.
 */
export function replayRun(functions: HubFunctions, instance: Instance, startedMs: number) {
  let currentMs = startedMs;
  const signals: Array<{ entityKey: string; operation: ChargeEntityOperation; sentAtMs: number }> = [];
  let continued: { input: unknown } | undefined;
  const context = {
    df: {
      getInput: () => structuredClone(instance.input),
      get currentUtcDateTime() {
        return new Date(currentMs);
      },
      callEntity: (id: df.EntityId, _name: string, operation: ChargeEntityOperation): HubTask => ({
        kind: 'entity',
        entityKey: id.key,
        operation,
        sentAtMs: currentMs,
      }),
      callActivity: (name: string, input: unknown): HubTask => ({ kind: 'activity', name, input: structuredClone(input) }),
      createTimer: (at: Date): HubTask => ({ kind: 'timer', atMs: at.getTime() }),
      signalEntity: (id: df.EntityId, _name: string, operation: ChargeEntityOperation) =>
        void signals.push({ entityKey: id.key, operation, sentAtMs: currentMs }),
      continueAsNew: (input: unknown) => void (continued = { input: structuredClone(input) }),
    },
  } as unknown as df.OrchestrationContext;
  const generator = functions.orchestrator(context);
  let taskIndex = 0;
  let step: IteratorResult<unknown, unknown>;
  try {
    step = generator.next();
    while (!step.done) {
      const result = instance.results[taskIndex];
      if (!result) return { next: step.value as HubTask, taskIndex, signals, done: false as const };
      taskIndex++;
      currentMs = result.episodeMs;
      step = result.ok ? generator.next(structuredClone(result.value)) : generator.throw(new Error(result.error));
    }
    return { taskIndex, signals, done: true as const, output: step.value, continued };
  } catch (error) {
    return { taskIndex, signals, done: true as const, failed: error instanceof Error ? error.message : String(error) };
  }
}
