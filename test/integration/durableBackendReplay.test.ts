/**
 * The local Durable backend (tools/local/durable) with test-only registrations (not the app's), on Azurite:
 * an entity batch whose operation throws, and an orchestrator that is not deterministic.
 */
import { TableClient } from '@azure/data-tables';
import * as df from 'durable-functions';
import type { EntityContext, OrchestrationContext } from 'durable-functions';
import { DurableStore } from '../../tools/local/durable/DurableStore';
import { EventType } from '../../tools/local/durable/historyEvents';
import { LocalDurableBackend } from '../../tools/local/durable/LocalDurableBackend';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();

/** Which operations ran in which entity batch (the invocation id of the batch). */
const entityOps: Array<{ op: string; invocationId: string }> = [];
/** `slow` holds the entity until the test opens this gate (not a fixed time: on a loaded machine setting up the next calls may take longer). */
let openSlowGate: () => void = () => undefined;
let slowGate: Promise<void> = Promise.resolve();
/** Invocations of the non-deterministic orchestrator (its branch depends on it). */
let nondeterministicRuns = 0;

type Counter = { value: unknown; boomed?: boolean };

const host = WorkerHost.load(() => {
  // The SDK's Entity dispatcher awaits an async handler (its type says void).
  // eslint-disable-next-line @typescript-eslint/no-misused-promises
  df.app.entity('probeCounter', async (context: EntityContext<Counter>) => {
    entityOps.push({ op: context.df.operationName ?? '', invocationId: context.invocationId });
    switch (context.df.operationName) {
      case 'slow': // holds the entity (until the test opens the gate), so the next requests queue up into one batch
        await slowGate;
        context.df.setState({ value: 'slow' });
        return context.df.return('slow');
      case 'set':
        context.df.setState({ value: context.df.getInput() });
        return context.df.return('set');
      case 'boom':
        context.df.setState({ value: context.df.getInput(), boomed: true });
        throw new Error('boom after setState');
      case 'get':
        return context.df.return(context.df.getState());
    }
  });
  // One entity call per instance (the backend does not carry out Task.all's compound actions: docs/demo.md).
  df.app.orchestration('probeEntityCall', function* (context: OrchestrationContext) {
    const { op, value } = context.df.getInput<{ op: string; value?: unknown }>();
    try {
      return { result: (yield context.df.callEntity(new df.EntityId('probeCounter', 'k1'), op, value)) as unknown };
    } catch (error) {
      return { caught: error instanceof Error ? error.message : String(error) };
    }
  });
  df.app.activity('probeEcho', { handler: (input: unknown) => input });
  // Deliberately non-deterministic: the first execution calls an activity; every replay waits for an
  // external event instead (as a branch on Math.random() or Date.now() would), which nothing ever raises.
  // In Azure, DurableTask.Core's replay check would fail this instance (NonDeterministicOrchestrationException:
  // the history's TaskScheduled 0 has no matching action); the local backend does not check actions against
  // history, so here it never completes and stays Running (docs/demo.md, "What still differs").
  df.app.orchestration('probeNondeterministic', function* (context: OrchestrationContext) {
    if (nondeterministicRuns++ === 0) return (yield context.df.callActivity('probeEcho', 'first')) as unknown;
    return (yield context.df.waitForExternalEvent('approval')) as unknown;
  });
});

let backend: LocalDurableBackend | undefined;
afterEach(async () => {
  await backend?.stop();
  backend = undefined;
});

async function startBackend(): Promise<LocalDurableBackend> {
  const table = TableClient.fromConnectionString(azuriteOf().connectionString, `probe${Math.random().toString(36).slice(2, 10)}`, {
    allowInsecureConnection: true,
  });
  const store = new DurableStore(table);
  await store.ensure();
  backend = new LocalDurableBackend({ store, host, restartDelayMs: 20 });
  return backend;
}

describe('local Durable backend: test-only registrations on Azurite', () => {
  test('an entity operation that throws does not roll back the state set before the throw, in the same batch', async () => {
    const b = await startBackend();
    entityOps.length = 0;
    slowGate = new Promise<void>((resolve) => (openSlowGate = resolve));
    const call = async (id: string, op: string, value?: unknown) => {
      expect(await b.start('probeEntityCall', id, JSON.stringify({ op, value }))).toBe(true);
      // Its first checkpoint is committed once the instance has history: its request is then queued at the entity.
      await waitFor(async () => ((await b.store.instance(id))?.historyLength ?? 0) > 0);
    };
    await call('call-slow', 'slow');
    await waitFor(async () => entityOps.length > 0); // the entity is busy with `slow` until the gate opens
    await call('call-set', 'set', 5);
    await call('call-boom', 'boom', 7);
    openSlowGate();
    await b.drain();
    await call('call-get', 'get');
    await b.drain();

    const output = async (id: string) => {
      const row = await b.store.instance(id);
      expect(row?.runtimeStatus).toBe('Completed');
      return JSON.parse(row?.outputJson ?? 'null') as { result?: unknown; caught?: string };
    };
    // `set` and `boom` ran in one batch (one invocation), after `slow`; `get` in a batch of its own.
    expect(entityOps.map((o) => o.op)).toEqual(['slow', 'set', 'boom', 'get']);
    const batchOf = (op: string) => entityOps.find((o) => o.op === op)?.invocationId;
    expect(batchOf('set')).toBe(batchOf('boom'));
    expect(new Set(entityOps.map((o) => o.invocationId)).size).toBe(3);
    expect(b.counters).toMatchObject({ entityBatches: 3, entityOperations: 4 });
    expect(await output('call-set')).toEqual({ result: 'set' });
    // The failure reached its orchestration as a failed task (its text is lost by the SDK: JSON.stringify(error) is "{}").
    expect((await output('call-boom')).caught).toMatch(/operation 'boom' of entity @probecounter@k1 failed/);
    // No rollback: the state `boom` set before throwing is what the batch saved, and what `get` read.
    expect(await b.entityState<Counter>('@probecounter@k1')).toEqual({ value: 7, boomed: true });
    expect(await output('call-get')).toEqual({ result: { value: 7, boomed: true } });
  });

  test('a non-deterministic orchestrator does not complete: the backend leaves it Running and reports it unfinished', async () => {
    const b = await startBackend();
    nondeterministicRuns = 0;
    expect(await b.start('probeNondeterministic', 'nondet-1', 'null')).toBe(true);
    await b.drain(); // returns: nothing is left to deliver, the instance waits for an event that never comes

    const row = await b.store.instance('nondet-1');
    expect(row?.runtimeStatus).toBe('Running');
    expect(await b.store.unfinishedInstances()).toEqual(['nondet-1']);
    const history = row ? await b.store.history(row) : [];
    expect(history.map((e) => e.EventType)).not.toContain(EventType.ExecutionCompleted);
    expect(history.map((e) => e.EventType)).not.toContain(EventType.ExecutionFailed);
    // The activity ran once; its TaskCompleted was committed and replayed into a generator that no longer waits on it.
    expect(history.filter((e) => e.EventType === EventType.TaskCompleted)).toHaveLength(1);
    expect(b.counters).toMatchObject({ activityCalls: 1, episodes: 2 });
    expect(nondeterministicRuns).toBe(2);
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
