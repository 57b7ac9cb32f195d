/**
 * The local Durable backend's fidelity to durable-functions' replay, on the app's own registrations
 * (`registerPaymentsFunctions`: `chargePayment`, `paymentCharge`, `chargeProvider`), Azurite and the fake
 * provider: what the backend stores as history, what a crash replays, what the client API answers.
 * Everything here is what the local backend shows; docs/demo.md ("What still differs") lists what only the
 * real extension and storage provider give.
 */
import { app, trigger } from '@azure/functions';
import * as df from 'durable-functions';
import { CHARGE_ACTIVITY, CHARGE_ENTITY, CHARGE_ORCHESTRATION } from '../../src/app/durableCharge';
import { DurableChargeWorkflow } from '../../src/app/DurableChargeWorkflow';
import type { ChargeEntityState } from '../../src/payments/chargeEntity';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { DurableHttpApi } from '../../tools/local/durable/DurableHttpApi';
import type { DurableStore, InstanceRow } from '../../tools/local/durable/DurableStore';
import { EventType, type HistoryEvent, type SdkOrchestratorState } from '../../tools/local/durable/historyEvents';
import type { DurableCrashPoint, LocalDurableBackend } from '../../tools/local/durable/LocalDurableBackend';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { startPaymentsRig, type PaymentsRig } from '../../tools/local/paymentsRig';
import { useAzurite } from '../support/azurite';

const azuriteOf = useAzurite();
let provider: FakePaymentProvider;
let rig: PaymentsRig | undefined;

beforeEach(async () => {
  provider = await FakePaymentProvider.start();
});
afterEach(async () => {
  await rig?.workflow.stop?.();
  rig = undefined;
  await provider.stop();
});

type RegisteredRig = PaymentsRig & { backend: LocalDurableBackend; workflow: { counters: LocalDurableBackend['counters'] } };

async function registeredRig(durableCrashBefore?: (point: DurableCrashPoint, id: string) => boolean): Promise<RegisteredRig> {
  const r = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    durable: 'registered',
    durableCrashBefore,
    restartDelayMs: 20,
    leaseMs: 5_000,
    design: 'hold', // the histories below are the holding design's; the handoff's are in paymentsHandOff.test.ts
  });
  rig = r;
  if (!r.backend) throw new Error('the registered rig has no Durable backend');
  return r as RegisteredRig; // durable: 'registered' builds the replay backend
}

const payment = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

/** Every orchestration instance row of the backend's table. */
async function instances(store: DurableStore): Promise<InstanceRow[]> {
  const rows: InstanceRow[] = [];
  for await (const r of store.table.listEntities<{ partitionKey: string }>({ queryOptions: { filter: "RowKey eq '~instance'" } })) {
    const row = await store.instance(r.partitionKey);
    if (row) rows.push(row);
  }
  return rows;
}

/** The only instance of the run, with its committed history. */
async function onlyInstance(backend: LocalDurableBackend): Promise<{ row: InstanceRow; history: HistoryEvent[] }> {
  const rows = await instances(backend.store);
  expect(rows).toHaveLength(1);
  return { row: rows[0], history: await backend.store.history(rows[0]) };
}

const typeName = Object.fromEntries(Object.entries(EventType).map(([name, n]) => [n, name])) as Record<number, string>;
const names = (history: readonly HistoryEvent[]) => history.map((e) => typeName[e.EventType] ?? String(e.EventType));

/**
 * The happy path's history, four episodes (each framed by OrchestratorStarted / OrchestratorCompleted):
 * start -> entity `begin` sent; its reply -> activity scheduled; activity result -> entity `complete` sent;
 * its reply -> completed.
 */
const HAPPY_PATH = [
  ...['OrchestratorStarted', 'ExecutionStarted', 'EventSent', 'OrchestratorCompleted'],
  ...['OrchestratorStarted', 'EventRaised', 'TaskScheduled', 'OrchestratorCompleted'],
  ...['OrchestratorStarted', 'TaskCompleted', 'EventSent', 'OrchestratorCompleted'],
  ...['OrchestratorStarted', 'EventRaised', 'ExecutionCompleted', 'OrchestratorCompleted'],
];

/** Checks the ids that tie the events together, as durable-functions' TaskOrchestrationExecutor reads them. */
function expectSdkShapes(history: readonly HistoryEvent[], entityKey: string) {
  const sent = history.filter((e) => e.EventType === EventType.EventSent);
  const raised = history.filter((e) => e.EventType === EventType.EventRaised);
  const scheduled = history.filter((e) => e.EventType === EventType.TaskScheduled);
  const completed = history.filter((e) => e.EventType === EventType.TaskCompleted);
  // Sequence numbers as the SDK assigns them: one per yielded task, in order.
  expect(sent.map((e) => e.EventId)).toEqual([0, 2]);
  expect(scheduled.map((e) => e.EventId)).toEqual([1]);
  // EventSent: the entity's scheduler id and the request message the SDK re-keys its task on (`id`).
  const requests = sent.map((e) => JSON.parse(String(e.Input)) as { id: string; op: string; signal: boolean; input: string });
  for (const e of sent) expect(e).toMatchObject({ InstanceId: `@${CHARGE_ENTITY.toLowerCase()}@${entityKey}`, Name: 'op' });
  expect(requests.map((m) => [m.op, m.signal])).toEqual([
    ['begin', false],
    ['complete', false],
  ]);
  // EventRaised: named by that request id, its Input a ResponseMessage ({ result } as JSON text).
  expect(raised.map((e) => e.Name)).toEqual(requests.map((m) => m.id));
  const replies = raised.map((e) => JSON.parse(JSON.parse(String(e.Input)).result as string) as unknown);
  expect(replies).toEqual([{ decision: 'proceed' }, { decision: 'recorded' }]);
  // TaskScheduled / TaskCompleted: the activity's name, and the completion pointing at its sequence number.
  expect(scheduled[0]).toMatchObject({ Name: CHARGE_ACTIVITY });
  expect(completed).toHaveLength(1);
  expect(completed[0].TaskScheduledId).toBe(1);
  // Everything committed is marked played on the next episode, never stored as played.
  expect(history.every((e) => e.IsPlayed === false)).toBe(true);
}

/** The orchestration trigger input the backend sends, with the whole history played (a pure replay). */
async function replayAll(backend: LocalDurableBackend, row: InstanceRow, history: readonly HistoryEvent[]): Promise<SdkOrchestratorState> {
  const host = (backend as unknown as { options: { host: WorkerHost } }).options.host;
  const played = history.map((e) => ({ ...e, IsPlayed: true }));
  return (await host.invoke(row.name, {
    inputData: [
      {
        name: host.bindingName(row.name, 'orchestrationTrigger'),
        data: {
          string: JSON.stringify({
            history: played,
            input: JSON.parse(row.inputJson) as unknown,
            instanceId: row.instanceId,
            isReplaying: true,
            parentInstanceId: null,
            upperSchemaVersion: 2,
            upperSchemaVersionNew: 3,
          }),
        },
      },
    ],
  })) as SdkOrchestratorState;
}

describe('local Durable backend on the registered payments functions (Azurite, fake provider)', () => {
  test('one payment: the orchestration completes with the SDK-shaped history, the entity is completed, one activity run, one charge', async () => {
    const r = await registeredRig();
    const result = await r.deliver(payment('pay-one'), { messageId: 'pay-one', deliveryCount: 1 });
    await r.workflow.drain();

    expect(result).toMatchObject({ outcome: 'processed', result: { status: 'succeeded', amount: 1250, currency: 'EUR' } });
    const { row, history } = await onlyInstance(r.backend);
    expect(row).toMatchObject({ name: CHARGE_ORCHESTRATION, runtimeStatus: 'Completed', historyLength: HAPPY_PATH.length, nextSeq: 3, actionsDone: 3 });
    expect(names(history)).toEqual(HAPPY_PATH);
    const input = JSON.parse(row.inputJson) as ChargeOrchestrationInput;
    expectSdkShapes(history, input.entityKey);
    expect(history.find((e) => e.EventType === EventType.ExecutionStarted)).toMatchObject({
      Name: CHARGE_ORCHESTRATION,
      OrchestrationInstance: { InstanceId: row.instanceId, ExecutionId: row.executionId },
    });
    const charged = result.outcome === 'processed' ? result.result : undefined;
    expect(JSON.parse(row.outputJson)).toEqual(charged);
    expect(JSON.parse(String(history.find((e) => e.EventType === EventType.ExecutionCompleted)?.Result))).toEqual(charged);

    // The entity's saved state after the run.
    const state = await r.workflow.entityState(input.entityKey);
    expect(state).toMatchObject({ status: 'completed', attempt: input.attempt, result: charged } satisfies Partial<ChargeEntityState>);

    // One activity run, one provider call, one charge with the payment's key.
    expect(r.workflow.counters).toMatchObject({ activityCalls: 1, episodes: 4, entityBatches: 2, entityOperations: 2, crashes: 0 });
    expect(provider.rawCalls).toBe(1);
    expect(provider.chargesFor('pay-one')).toBe(1);
    expect([...(provider.keysByPayment.get('pay-one') ?? [])]).toEqual([input.idempotencyKey]);

    // The stored history replays through the SDK to the same end: done, same output, no action beyond those recorded.
    const replayed = await replayAll(r.backend, row, history);
    expect(replayed.isDone).toBe(true);
    expect(replayed.output).toEqual(charged);
    expect(replayed.actions.flat(2)).toHaveLength(row.actionsDone);
  });

  test('a host crash before each orchestration checkpoint: every step replays from history, same result and history, the activity runs once', async () => {
    let calls = 0;
    // Every episode crashes once before its checkpoint (odd calls), then runs again from the same history.
    const r = await registeredRig((point) => point === 'orchestrator' && calls++ % 2 === 0);
    const result = await r.deliver(payment('pay-crash-orch'), { messageId: 'pay-crash-orch', deliveryCount: 1 });
    await r.workflow.drain();

    expect(result).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
    const { row, history } = await onlyInstance(r.backend);
    expect(row.runtimeStatus).toBe('Completed');
    expect(names(history)).toEqual(HAPPY_PATH); // nothing of the lost steps was committed
    expectSdkShapes(history, (JSON.parse(row.inputJson) as ChargeOrchestrationInput).entityKey);
    expect(r.workflow.counters).toMatchObject({ crashes: 4, episodes: 8, activityCalls: 1, entityOperations: 2 });
    // A crashed episode's actions were not sent: the episodes after the first replayed the committed events.
    expect(r.workflow.counters.replayedEvents).toBe(2 * (4 + 8 + 12));
    expect(provider.rawCalls).toBe(1);
    expect(provider.chargesFor('pay-crash-orch')).toBe(1);
    expect(JSON.parse(row.outputJson)).toEqual(result.outcome === 'processed' ? result.result : undefined);
  });

  test('a host crash after the provider charged: the activity runs again and the Idempotency-Key makes it one charge', async () => {
    let crashed = 0;
    const r = await registeredRig((point) => point === 'after-activity' && crashed++ === 0);
    const result = await r.deliver(payment('pay-crash-act'), { messageId: 'pay-crash-act', deliveryCount: 1 });
    await r.workflow.drain();

    expect(result).toMatchObject({ outcome: 'processed', result: { status: 'succeeded' } });
    expect(r.workflow.counters).toMatchObject({ crashes: 1, activityCalls: 2 });
    expect(provider.rawCalls).toBe(2); // the provider was called twice...
    expect(provider.effectiveCharges).toBe(1); // ...and charged once: the second call was a replay of the key
    expect(provider.chargesFor('pay-crash-act')).toBe(1);
    expect(provider.keysByPayment.get('pay-crash-act')?.size).toBe(1);
    const { row, history } = await onlyInstance(r.backend);
    expect(names(history)).toEqual(HAPPY_PATH); // one TaskScheduled, one TaskCompleted: the lost result left no trace
    const output = JSON.parse(row.outputJson) as { chargeId: string };
    expect(output.chargeId).toBe(provider.charges[0].chargeId);
  });

  describe('the client API as the SDK calls it (DurableHttpApi)', () => {
    let api: DurableHttpApi | undefined;
    afterEach(async () => {
      await api?.close();
      api = undefined;
    });

    /** The SDK's DurableClient, built by `df.getClient` from the durableClient binding data the host passes. */
    async function clientOf(backend: LocalDurableBackend): Promise<df.DurableClient> {
      api = await DurableHttpApi.start(backend, new Set([CHARGE_ORCHESTRATION]));
      let client: df.DurableClient | undefined;
      const probe = WorkerHost.load(() =>
        app.generic('durableClientProbe', {
          trigger: trigger.generic({ type: 'probeTrigger' }),
          extraInputs: [df.input.durableClient()],
          handler: (_input, context) => {
            client = df.getClient(context);
          },
        }),
      );
      await probe.invoke('durableClientProbe', {
        inputData: [
          { name: probe.bindingName('durableClientProbe', 'probeTrigger'), data: { string: '{}' } },
          { name: probe.bindingName('durableClientProbe', 'durableClient'), data: { string: api.clientBindingData() } },
        ],
      });
      if (!client) throw new Error('the probe did not run');
      return client;
    }

    test("getStatus of an unknown instance takes the SDK's HTTP 404 error path; DurableChargeWorkflow maps it to 'none'", async () => {
      const r = await registeredRig();
      const client = await clientOf(r.backend);
      await expect(client.getStatus('payment-unknown')).rejects.toThrow(/replied with HTTP 404 response/);
      await expect(new DurableChargeWorkflow(client).status('payment-unknown')).resolves.toEqual({ state: 'none' });
    });

    test('startNew on a running instance is refused (500, "already exists"); DurableChargeWorkflow.start takes it as running; a completed one starts a new run', async () => {
      const r = await registeredRig();
      const client = await clientOf(r.backend);
      const workflow = new DurableChargeWorkflow(client);
      const input: ChargeOrchestrationInput = { idempotencyKey: 'pay-api', entityKey: 'probe-entity', attempt: 1, payment: payment('pay-api') };
      provider.setLatency(1_000); // holds the activity, so the instance is Running meanwhile

      await expect(workflow.start('payment-probe', input)).resolves.toBe('started');
      await waitFor(async () => (await r.backend.store.instance('payment-probe'))?.runtimeStatus === 'Running');
      await expect(client.startNew(CHARGE_ORCHESTRATION, { instanceId: 'payment-probe', input })).rejects.toThrow(
        /unexpected status code: 500.*An Orchestration instance with the status Running already exists/,
      );
      await expect(workflow.start('payment-probe', input)).resolves.toBe('running');
      expect(await workflow.status('payment-probe')).toEqual({ state: 'running' });

      await r.workflow.drain();
      const first = await r.backend.store.instance('payment-probe');
      expect(first?.runtimeStatus).toBe('Completed');
      const done = await workflow.status('payment-probe');
      expect(done).toMatchObject({ state: 'completed', output: { status: 'succeeded' } });

      // The extension's default (overridableExistingInstanceStates: NonRunningStates): a final instance starts again.
      provider.setLatency(0);
      await expect(client.startNew(CHARGE_ORCHESTRATION, { instanceId: 'payment-probe', input })).resolves.toBe('payment-probe');
      await r.workflow.drain();
      const second = await r.backend.store.instance('payment-probe');
      expect(second?.executionId).not.toBe(first?.executionId);
      expect(second?.runtimeStatus).toBe('Completed');
      // The second run found the entity completed and did not call the provider.
      expect(provider.rawCalls).toBe(1);
      expect(r.workflow.counters.activityCalls).toBe(1);
      expect(JSON.parse(second?.outputJson ?? 'null')).toEqual(JSON.parse(first?.outputJson ?? 'null'));
    });
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
