import { InvocationContext } from '@azure/functions';
import { keyFromMessageId, payloadDigest } from 'azure-functions-idempotency';
import type { ChargeEntityState } from '../../src/payments/chargeEntity';
import type { ChargeActivityInput } from '../../src/payments/chargeInputs';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { paymentRow } from '../../src/payments/paymentRow';
import type { PaymentDeliveryResult } from '../../src/payments/PaymentsConsumer';
import type { PaymentRequested } from '../../src/payments/schema';
import { SimApp } from './app';
import { FAULT_NAMES, type FaultRates } from './faults';
import { VISIBILITY_MS } from './hubTypes';
import { Random } from './random';
import { World } from './world';

/**
 * A script run on the simulator with no random fault: the same scripted payments the real engine runs in
 * test/durable/realEngine.differential.test.ts, so that the simulated task hub, store and provider are held to the
 * engine's answers (outcomes, provider calls, record, Payment row, entity, run) where a script can reach both.
 */

/** One scripted payment: its provider faults (before its first delivery), deliveries, and a takeover. */
export interface ScriptedPayment {
  readonly id: string;
  readonly customerId?: string;
  readonly faults?: ReadonlyArray<'error5xx' | 'timeout' | 'chargeThenDrop'>;
  /** Deliveries of the same message, one after another, each after the run finished (default 1). */
  readonly deliveries?: number;
  /** An earlier delivery claimed the key this long ago and died before starting its run; this one takes it over. */
  readonly claimedAgoMs?: number;
  /**
   * The task hub's own re-runs, on cue: `afterAnswer`: the host dies after the first provider activity's answer was
   * sent, before its work item was deleted (the item runs again after the visibility timeout); `beforeHistory`: the
   * host dies after the run's first episode sent the entity's `begin`, before its history was written (the episode
   * runs again at a new time and sends `begin` again).
   */
  readonly hostKill?: 'afterAnswer' | 'beforeHistory';
  /** An operator terminates the run while its provider call is on its way: charged, its answer held until the run reads Terminated (the engine: the activity's answer). */
  readonly terminateDuringCall?: boolean;
}

/** What the simulator shows of one payment after the script (raw: the test normalises it as it does the engine's). */
export interface PaymentView {
  readonly outcomes: string[];
  readonly providerCalls: number;
  readonly lookups: number;
  /** The provider's charges under this payment (their ids). */
  readonly ledger: string[];
  readonly record?: { readonly status: string; readonly attempt: number; readonly result?: unknown };
  readonly paymentRow?: Readonly<Record<string, unknown>>;
  readonly entity?: ChargeEntityState;
  readonly run: { readonly state: string; readonly output?: unknown };
  /** Executions of the run's provider activity (a work item run again counts twice). */
  readonly providerExecutions: number;
  /** Requests the payment's entity took in (`begin`, `complete`...; one re-sent by a re-run episode counts again). */
  readonly entityRequests: number;
}

export const paymentOf = (s: ScriptedPayment): PaymentRequested => ({ paymentId: s.id, customerId: s.customerId ?? 'cust-1', amount: 1250, currency: 'EUR' });

/** Runs the script, payment after payment, each to quiet (every event it caused has run); `settings` on top of the simulator's. */
export async function runScriptOnSimulator(
  script: readonly ScriptedPayment[],
  settings: Readonly<Record<string, string>>,
): Promise<Record<string, PaymentView>> {
  const world = new World(Date.UTC(2026, 0, 1));
  const noFaults = Object.fromEntries(FAULT_NAMES.map((name) => [name, 0])) as FaultRates;
  const app = new SimApp(world, Random.of(1, 'script'), noFaults, 'none', undefined, settings);
  const views: Record<string, PaymentView> = {};
  for (const scripted of script) {
    const payment = paymentOf(scripted);
    const key = keyFromMessageId('payments', scripted.id);
    if (scripted.claimedAgoMs !== undefined) {
      await during(world, app.store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] }));
      await world.runUntil(world.nowMs() + scripted.claimedAgoMs);
    }
    app.provider.forceNext.push(...(scripted.faults ?? []));
    if (scripted.hostKill === 'beforeHistory') app.hub.forceRestartOnEntity = 1;
    let terminated = !scripted.terminateDuringCall;
    app.provider.holdAnswer = async (call) => {
      if (terminated || call.kind !== 'charge' || call.key !== scripted.id) return;
      terminated = true;
      const record = await app.store.get(key);
      const instanceId = record && chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest));
      if (!instanceId) return;
      app.hub.terminate(instanceId, 'terminated by the script');
      while (app.hub.instances.get(instanceId)?.status !== 'Terminated') await world.sleep(100);
    };
    let killed = scripted.hostKill !== 'afterAnswer';
    app.hub.activityHook = (at, name, input, again) => {
      if (killed || at !== 'answered' || name !== 'chargeProvider' || (input as ChargeActivityInput).payment.paymentId !== scripted.id) return;
      killed = true;
      again(VISIBILITY_MS);
    };
    const before = {
      charges: app.provider.calls.filter((c) => c.kind === 'charge').length,
      lookups: app.provider.calls.filter((c) => c.kind === 'lookup').length,
    };
    const outcomes: string[] = [];
    for (let n = 1; n <= (scripted.deliveries ?? 1); n++) {
      const context = new InvocationContext({
        invocationId: `script-${scripted.id}-${n}`,
        functionName: 'paymentsConsumer',
        triggerMetadata: { messageId: scripted.id, deliveryCount: n, correlationId: `corr-${scripted.id}` },
        logHandler: () => undefined,
      });
      const result = (await during(world, app.bus.trigger!(JSON.parse(JSON.stringify(payment)), context))) as PaymentDeliveryResult;
      outcomes.push(result.outcome);
      await quiet(world);
    }
    const record = await during(world, app.store.get(key));
    const entityKey = record && chargeEntityKey(record.recordId, record.createdAtMs, record.digest);
    const instance = entityKey === undefined ? undefined : app.hub.instances.get(chargeInstanceId(entityKey));
    const state = instance?.status.toLowerCase() ?? 'none';
    views[scripted.id] = {
      outcomes,
      providerCalls: app.provider.calls.filter((c) => c.kind === 'charge').length - before.charges,
      lookups: app.provider.calls.filter((c) => c.kind === 'lookup').length - before.lookups,
      ledger: app.provider.ledger.filter((c) => c.paymentId === scripted.id).map((c) => c.chargeId),
      record: record && { status: record.status, attempt: record.attempt, result: record.result },
      paymentRow: app.store.inner.localRowsOf(key).get('payment'),
      entity: entityKey === undefined ? undefined : app.hub.entities.get(entityKey)?.state,
      run: state === 'completed' ? { state, output: instance?.output } : { state },
      providerExecutions: app.hub.activityRuns.filter((r) => r.name === 'chargeProvider' && r.instanceId === instance?.id).length,
      entityRequests: entityKey === undefined ? 0 : (app.hub.entities.get(entityKey)?.seen.size ?? 0),
    };
  }
  return views;
}

/** Runs the world until `promise` settles (the app's code waits only on the world's events). */
async function during<T>(world: World, promise: Promise<T>): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => (settled = true));
  await world.runUntil(Number.MAX_SAFE_INTEGER, () => settled);
  if (!settled) throw new Error('the script waits on something no event will settle');
  return watched;
}

/** Runs every event left (timers, queue hops, the lock's end) without moving the clock past the last one. */
async function quiet(world: World): Promise<void> {
  await world.runUntil(Number.MAX_SAFE_INTEGER, () => world.nextAtMs() === undefined);
}
