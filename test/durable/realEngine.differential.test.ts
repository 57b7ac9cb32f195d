/**
 * The in-process executor (`tools/local/LocalChargeWorkflow.ts`, `durable: 'executor'`: the consumer's fast tests
 * with crash points at each step) against the REAL Durable engine (`durable: 'real'`: tools/durable-host) on the same
 * scripted runs: fresh payments with provider faults (none, a 503, a timeout before the charge, the answer lost after
 * the charge, a declined card), a duplicate delivery, and a takeover 25 h after the claim that must be held for an
 * operator. Per payment it compares what matters: the deliveries' outcomes, the provider's charges under the key,
 * the record (status, attempt, result), the Payment row, the entity's final state and the run's output. Any
 * difference fails the test: the executor may stand in for the engine only while they agree (docs/durable.md).
 * Both designs; the real runs take the machine-wide lock of port 17071 (one host start per design). Handoff: the
 * simulator (`tools/simulate/scripted.ts`: its task hub, store and provider in virtual time, the app's own code) runs
 * the same script and must agree too, so that its verdicts on the schedules it explores rest on an engine it matches.
 */
import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency/internal';
import type { ChargeEntityState } from '../../src/payments/chargeEntity';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import type { PaymentsDesign } from '../../src/payments/PaymentsConsumer';
import { paymentRow as paymentRowEffect } from '../../src/payments/paymentRow';
import type { ChargeResult } from '../../src/payments/schema';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import type { EngineStorageRequest } from '../../tools/local/durable/EngineStorageGate';
import { JumpClock } from '../../tools/local/JumpClock';
import type { LocalChargeWorkflow } from '../../tools/local/LocalChargeWorkflow';
import { startPaymentsRig, type PaymentsRig } from '../../tools/local/paymentsRig';
import { paymentOf, runScriptOnSimulator, type PaymentView, type ScriptedPayment } from '../../tools/simulate/scripted';
import { useAzurite } from '../support/azurite';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const azuriteOf = useAzurite();
const HOUR_MS = 3_600_000;

/** The script; the takeover comes last (its clock jump moves every later payment's time too). */
const SCRIPT: readonly ScriptedPayment[] = [
  { id: 'd-ok' },
  { id: 'd-503', faults: ['error5xx'] },
  { id: 'd-timeout', faults: ['timeout'] },
  { id: 'd-lost-answer', faults: ['chargeThenDrop'] },
  { id: 'd-declined', customerId: 'decline-1' },
  { id: 'd-duplicate', deliveries: 2 },
  { id: 'd-held', claimedAgoMs: 25 * HOUR_MS },
];

/** The rig's settings as the simulator takes them (lease 60 s, retry budget 60 s from 500 ms to 1 s). */
const SIM_SETTINGS = {
  IDEMPOTENCY_RETENTION_DAYS: '30',
  IDEMPOTENCY_LEASE_SECONDS: '60',
  PAYMENT_RETRY_BUDGET_MINUTES: '1',
  PAYMENT_RETRY_FIRST_DELAY_SECONDS: '0.5',
  PAYMENT_RETRY_MAX_DELAY_SECONDS: '1',
};

/** What one backend shows after the script, per payment. */
type Observed = Record<string, unknown>;

/** The backend-specific reads: the entity's final state and the run's final status and output. */
interface Reads {
  entity(entityKey: string): Promise<ChargeEntityState | undefined>;
  run(instanceId: string): Promise<{ state: string; output?: unknown }>;
}

/**
 * The task hub's own re-runs, on cue (issue 50 item 5), run on the real engine and the simulator only (the executor
 * has no work-item queue): the host killed after a provider activity's answer was sent, before its work item was
 * deleted (the answer a success, then a 503 whose retry charges: the copy of round 1 runs after the run completed),
 * and after the first episode sent the entity's `begin`, before its history was written; and a terminate queued
 * behind work: sent while the provider call is on its way (charged, its answer held until the run reads Terminated).
 */
const ENGINE_SCRIPT: readonly ScriptedPayment[] = [
  { id: 'e-item-again', hostKill: 'afterAnswer' },
  { id: 'e-item-again-503', faults: ['error5xx'], hostKill: 'afterAnswer' },
  { id: 'e-episode-again', hostKill: 'beforeHistory' },
  { id: 'e-terminated', terminateDuringCall: true },
];

/** The engine's storage requests during the current payment (seen by the gate in front of the task hub's Azurite), and its kill cue. */
class EngineCue {
  payment?: ScriptedPayment;
  killed = false;
  terminated = false;
  terminateWaitMs = 0;
  private beginSent = false;
  workItemsSent = 0;
  workItemDeletes = 0;
  entityRequests = 0;

  next(payment: ScriptedPayment): void {
    Object.assign(this, { payment, killed: false, terminated: false, beginSent: false, workItemsSent: 0, workItemDeletes: 0, entityRequests: 0 });
  }

  /**
   * What the engine's request meets: `kill` where the host is to die (before it lands); for a terminate queued behind
   * work, the activity's answer (TaskCompleted on a control queue: the activity has charged and recorded) held until
   * `terminate` (the operator's, through the HTTP API) is applied, then let through to a terminated run.
   */
  onStorage(request: EngineStorageRequest, terminate: () => Promise<void>): 'kill' | 'pass' | Promise<'pass'> {
    const answer = /-control-\d+\/messages/.test(request.path) && request.method === 'POST' && request.text.includes('TaskCompletedEvent');
    if (this.payment?.terminateDuringCall && answer && !this.terminated) {
      this.terminated = true;
      const sentAt = Date.now();
      return terminate().then(() => ((this.terminateWaitMs = Date.now() - sentAt), 'pass' as const));
    }
    return this.killHere(request) ? 'kill' : 'pass';
  }

  /** True where the host is to die: before this request lands. */
  private killHere(request: EngineStorageRequest): boolean {
    const queue = request.service === 'queue' ? /-(control-\d+|workitems)\/messages/.exec(request.path)?.[1] : undefined;
    const entityOp = queue?.startsWith('control') === true && request.method === 'POST' && request.text.includes('"Name":"op"');
    if (entityOp) this.entityRequests++;
    if (queue === 'workitems' && request.method === 'POST') this.workItemsSent++;
    const workItemDelete = queue === 'workitems' && request.method === 'DELETE';
    if (workItemDelete) this.workItemDeletes++;
    const kill = this.payment?.hostKill;
    if (this.killed || !kill) return false;
    if (kill === 'afterAnswer') return (this.killed = workItemDelete);
    if (entityOp && request.text.includes('begin')) this.beginSent = true;
    const runHistory = request.service === 'table' && request.path.includes('$batch') && request.text.includes("History(PartitionKey='payment-");
    return (this.killed = this.beginSent && runHistory);
  }
}

async function runScript(
  durable: 'executor' | 'real',
  design: PaymentsDesign,
  script = SCRIPT,
  cue?: EngineCue,
  providerTimeoutMs = 2_000,
): Promise<Record<string, Observed>> {
  const provider = await FakePaymentProvider.start();
  const clock = new JumpClock();
  const rig = await startPaymentsRig({
    tableConnectionString: azuriteOf().connectionString,
    providerUrl: provider.url,
    providerTimeoutMs,
    durable,
    design,
    clock,
    leaseMs: 60_000,
    retry: { budgetMs: 60_000, firstDelayMs: 500, maxDelayMs: 1_000 },
    // Hold, executor only: 5 calls as PROVIDER_RETRY (the engine's runs use it), short intervals.
    activityRetry: { maxAttempts: 5, firstRetryIntervalMs: 100 },
    onEngineStorage: cue && ((request) => cue.onStorage(request, () => terminateAndWait(rig, cue.payment!.id))),
  });
  try {
    const reads = durable === 'real' ? realReads(rig) : executorReads(rig.workflow as LocalChargeWorkflow);
    const observed: Record<string, Observed> = {};
    for (const scripted of script) {
      cue?.next(scripted);
      const payment = paymentOf(scripted);
      if (scripted.claimedAgoMs !== undefined) {
        await rig.store.claim(keyFromMessageId('payments', scripted.id), payloadDigest(payment), { effects: [paymentRowEffect(payment, 'pending')] });
        clock.jump(scripted.claimedAgoMs);
      }
      provider.injectNext(...(scripted.faults ?? []));
      const calls = { charges: provider.rawCalls, lookups: provider.lookups };
      const outcomes: string[] = [];
      for (let n = 1; n <= (scripted.deliveries ?? 1); n++) {
        outcomes.push((await rig.deliver(payment, { messageId: scripted.id, deliveryCount: n })).outcome);
        // The engine script's host restarts wait out visibility timeouts (a minute each): on a busy machine a run can
        // show no progress for longer than the drain's default 2 min.
        await rig.workflow.drain(cue ? 600_000 : undefined);
      }
      if (cue?.killed && scripted.hostKill === 'afterAnswer') await reRunDone(cue);
      // The provider calls this payment made (charge requests, look-ups), beside what they left.
      const made = { providerCalls: provider.rawCalls - calls.charges, lookups: provider.lookups - calls.lookups };
      const view = observedOf(await viewOf(rig, provider, reads, scripted.id, outcomes, made));
      observed[scripted.id] = cue ? { ...view, providerExecutions: cue.workItemDeletes, entityRequests: cue.entityRequests, hostKilled: cue.killed } : view;
    }
    return observed;
  } finally {
    await rig.workflow.stop();
    await rig.close?.();
    await provider.stop();
  }
}

/** The operator's terminate of `paymentId`'s run through the extension's HTTP API; resolves once the run reads Terminated (up to 50 s). */
async function terminateAndWait(rig: PaymentsRig, paymentId: string): Promise<void> {
  const record = (await rig.store.get(keyFromMessageId('payments', paymentId)))!;
  const instanceId = chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
  const rpc = (JSON.parse((rig.backend as { engine: { clientBindingData: string } }).engine.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl;
  const sent = await fetch(`${rpc}instances/${encodeURIComponent(instanceId)}/terminate?reason=scripted`, { method: 'POST' });
  if (sent.status !== 202) throw new Error(`terminate ${instanceId}: HTTP ${sent.status}`);
  const cap = Date.now() + 50_000;
  while (Date.now() < cap) {
    const status = (await (await fetch(`${rpc}instances/${encodeURIComponent(instanceId)}`)).json()) as { runtimeStatus: string };
    if (status.runtimeStatus === 'Terminated') return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits (up to 5 min) until every work item sent has run, the one whose delete died with the host twice. */
async function reRunDone(cue: EngineCue): Promise<void> {
  const cap = Date.now() + 300_000;
  while (cue.workItemDeletes < cue.workItemsSent + 1 && Date.now() < cap) await new Promise((r) => setTimeout(r, 500));
}

/** What the engine (or the executor) shows of one payment after the script, in the simulator's terms. */
async function viewOf(
  rig: PaymentsRig,
  provider: FakePaymentProvider,
  reads: Reads,
  id: string,
  outcomes: string[],
  made: { providerCalls: number; lookups: number },
): Promise<PaymentView> {
  const ledger = provider.charges.filter((c) => c.paymentId === id).map((c) => c.chargeId);
  const record = await rig.store.get(keyFromMessageId('payments', id));
  if (!record) return { outcomes, ...made, ledger, providerExecutions: 0, entityRequests: 0, run: { state: 'none' } };
  const entityKey = chargeEntityKey(record.recordId, record.createdAtMs, record.digest);
  return {
    outcomes,
    ...made,
    ledger,
    providerExecutions: 0,
    entityRequests: 0,
    record: { status: record.status, attempt: record.attempt, result: record.result },
    paymentRow: await paymentRowOf(rig, id),
    entity: await reads.entity(entityKey),
    run: await reads.run(chargeInstanceId(entityKey)),
  };
}

/** What is compared of a payment: a charge id only as "the ledger's one charge" (ids differ by construction). */
function observedOf(view: PaymentView): Observed {
  const { outcomes, providerCalls, lookups, ledger } = view;
  const chargeIdOf = (chargeId: unknown) => (chargeId !== undefined && ledger.length === 1 && chargeId === ledger[0] ? 'the ledger charge' : chargeId);
  const result = (r: ChargeResult | undefined) => (r?.status === 'succeeded' ? { ...r, chargeId: chargeIdOf(r.chargeId) } : r);
  if (!view.record) return { providerCalls, lookups, outcomes, charges: ledger.length, record: 'none' };
  const { record, paymentRow: row, entity, run } = view;
  return {
    providerCalls,
    lookups,
    outcomes,
    charges: ledger.length,
    record: { status: record.status, attempt: record.attempt, result: result(record.result as ChargeResult | undefined) },
    paymentRow: row && { state: row.state, amount: row.amount, currency: row.currency, reason: row.reason, chargeId: chargeIdOf(row.chargeId) },
    entity: entity && {
      status: entity.status,
      attempt: 'attempt' in entity ? entity.attempt : undefined,
      result: entity.status === 'completed' ? result(entity.result) : undefined,
      reason: entity.status === 'failed' ? entity.reason : undefined,
    },
    run: { state: run.state, output: result(run.output as ChargeResult | undefined) },
  };
}

async function paymentRowOf(rig: PaymentsRig, id: string): Promise<Record<string, unknown> | undefined> {
  const address = rig.store.addressOf(keyFromMessageId('payments', id));
  return rig.store.client.getEntity<Record<string, unknown>>(address.partitionKey, `${address.rowKey}~payment`).catch(() => undefined);
}

function executorReads(workflow: LocalChargeWorkflow): Reads {
  return {
    entity: (entityKey) => workflow.entityState(entityKey),
    run: async (instanceId) => {
      const status = await workflow.status(instanceId);
      return status.state === 'completed' ? { state: 'completed', output: status.output } : { state: status.state };
    },
  };
}

function realReads(rig: PaymentsRig): Reads {
  const real = rig.workflow as { entityStateWhen(key: string, settled: (s: ChargeEntityState | undefined) => boolean): Promise<ChargeEntityState | undefined> };
  const engine = (rig.backend as { engine: { clientBindingData: string } }).engine;
  return {
    // The run tells the entity its result one-way: read it once it has applied it.
    entity: (entityKey) => real.entityStateWhen(entityKey, (state) => state?.status !== 'inProgress'),
    run: async (instanceId) => {
      const rpc = (JSON.parse(engine.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl;
      const response = await fetch(`${rpc}instances/${encodeURIComponent(instanceId)}`);
      if (response.status === 404) return { state: 'none' };
      const status = (await response.json()) as { runtimeStatus: string; output?: unknown };
      const state = status.runtimeStatus.toLowerCase();
      return state === 'completed' ? { state, output: status.output } : { state };
    },
  };
}

/** The script's invariants on the engine's results (so that agreement is not agreement on nothing). */
function expectScriptInvariants(observed: Record<string, Observed>): void {
  const charges = Object.fromEntries(Object.entries(observed).map(([id, o]) => [id, o.charges]));
  expect(charges).toEqual({ 'd-ok': 1, 'd-503': 1, 'd-timeout': 1, 'd-lost-answer': 1, 'd-declined': 0, 'd-duplicate': 1, 'd-held': 0 });
  // Each fault cost one more call: the script ran what it says.
  const calls = Object.fromEntries(Object.entries(observed).map(([id, o]) => [id, o.providerCalls]));
  expect(calls).toEqual({ 'd-ok': 1, 'd-503': 2, 'd-timeout': 2, 'd-lost-answer': 2, 'd-declined': 1, 'd-duplicate': 1, 'd-held': 0 });
  expect(observed['d-ok']).toMatchObject({
    record: { status: 'COMPLETED', result: { status: 'succeeded', chargeId: 'the ledger charge' } },
    entity: { status: 'completed' },
  });
  expect(observed['d-declined']).toMatchObject({ record: { status: 'COMPLETED', result: { status: 'declined' } } });
  expect((observed['d-duplicate'].outcomes as string[]).at(-1)).toBe('duplicate');
  expect(observed['d-held']).toMatchObject({
    record: { status: 'COMPLETED', attempt: 2, result: { status: 'failed', code: 'held-for-operator' } },
    entity: { status: 'failed' },
  });
}

describe.each(['handoff', 'hold'] as const)('%s design: the executor agrees with the real engine', (design) => {
  realEngineTest(
    `${design}: the same scripted payments (faults, a duplicate, a held takeover) give the same outcomes, charges, records, Payment rows, entity states and run outputs on the executor${design === 'handoff' ? ', the simulator' : ''} and on the real engine`,
    async () => {
      const executor = await runScript('executor', design);
      const real = await runScript('real', design);
      // The executor agrees with the engine on every payment, and what they agree on is what the script says.
      for (const { id } of SCRIPT) expect({ id, ...executor[id] }).toEqual({ id, ...real[id] });
      expectScriptInvariants(real);
      if (design === 'handoff') {
        // The simulator too (it models the handoff design): the same script in virtual time, no random fault.
        const views = await runScriptOnSimulator(SCRIPT, SIM_SETTINGS);
        for (const { id } of SCRIPT) expect({ id, ...observedOf(views[id]) }).toEqual({ id, ...real[id] });
      }
    },
    REAL_ENGINE_TIMEOUT_MS,
  );
});

describe("the task hub's own re-runs, on cue: the simulator agrees with the real engine", () => {
  realEngineTest(
    'handoff: a host killed after an activity answered (its work item runs again after the visibility timeout, also after a 503 whose retry charged) and after an episode sent the entity begin (the episode runs again at a new time and sends it again), and a terminate queued behind the provider call (the activity runs on and records the charge): the same outcomes, charges, executions, entity requests and records on the simulator and on the real engine',
    async () => {
      const cue = new EngineCue();
      // The provider client waits the settings' 10 s on both (the charge-patience rule refuses much more). The terminate
      // holds the activity's answer on its way to the run, not the provider's answer: a busy engine may take its time.
      const real = await runScript('real', 'handoff', ENGINE_SCRIPT, cue, 10_000);
      const views = await runScriptOnSimulator(ENGINE_SCRIPT, { ...SIM_SETTINGS, PAYMENT_PROVIDER_TIMEOUT_MS: '10000' });
      expect(cue.terminateWaitMs).toBeGreaterThan(0); // the premise: the terminate was applied while the answer waited
      for (const { id, hostKill } of ENGINE_SCRIPT) {
        const { providerExecutions, entityRequests } = views[id];
        expect({ id, ...observedOf(views[id]), providerExecutions, entityRequests, hostKilled: hostKill !== undefined }).toEqual({ id, ...real[id] });
      }
      // What the cues did, on the engine (so that agreement is not agreement on nothing): each host was killed where
      // asked; the answered work item ran again (1 + 1, and 2 + 1 after the 503) and charged nothing more; the begin
      // was sent twice (begin, begin again, the run's complete signal) and the payment was charged once, not held.
      expect(
        Object.fromEntries(
          ENGINE_SCRIPT.map(({ id }) => [id, [real[id].providerExecutions, real[id].providerCalls, real[id].charges, real[id].entityRequests]]),
        ),
      ).toEqual({
        'e-item-again': [2, 1, 1, 2],
        'e-item-again-503': [3, 2, 1, 2],
        'e-episode-again': [1, 1, 1, 3],
        'e-terminated': [1, 1, 1, 1],
      });
      for (const { id } of ENGINE_SCRIPT)
        expect(real[id]).toMatchObject({
          record: { status: 'COMPLETED', result: { status: 'succeeded', chargeId: 'the ledger charge' } },
          run: { state: id === 'e-terminated' ? 'terminated' : 'completed' },
        });
      // The terminate was queued behind the provider call: the activity ran on and recorded the charge; the run never
      // told the entity (it is still in progress: the reconciler's and the stuck alert's case, docs/durable.md).
      expect(real['e-terminated']).toMatchObject({ entity: { status: 'inProgress' } });
    },
    REAL_ENGINE_TIMEOUT_MS,
  );
});
