/**
 * After the acknowledgement the run owns the payment (issue 34), on the REAL Durable engine (tools/durable-host, on
 * Azurite): a storage outage longer than the old record-write budget (8 tries, about 127 s) in the middle of a run's
 * record write, ridden out on durable timers, the run continuing as new so that its history stays bounded; a run terminated by the operator, found without any new delivery by the
 * expiry timer's reconciler, restarted and settled without a second charge, its metric counted; the purge with a
 * record held past retention keeps that record's orchestration and entity; and a takeover whose entity is gone looks
 * the charge up instead of charging blind (a provider that forgot the key would charge twice).
 */
import { app } from '@azure/functions';
import { TableClient } from '@azure/data-tables';
import * as df from 'durable-functions';
import { statusWithoutInput } from '../../src/app/durableInstances';
import { purgeDurableRecords } from '../../src/app/durablePurge';
import { expiryTimerFromSettings } from '../../src/app/expiryTimer';
import { reconcileOn } from '../../src/app/paymentsLifecycle';
import { loadSettings, type Settings } from '../../src/config/settings';
import { payloadDigest } from 'azure-functions-idempotency/internal';
import { keyFromMessageId, type IdempotencyKey } from 'azure-functions-idempotency/internal';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import { HANDOFF_VERSION } from '../../src/payments/chargeOrchestration';
import { PaymentProviderClient } from '../../src/payments/PaymentProviderClient';
import { paymentRow as pendingRow } from '../../src/payments/paymentRow';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startRealEnginePayments } from '../../tools/local/durable/realEnginePayments';
import { WorkerHost } from '../../tools/local/host/WorkerHost';
import { durableHttpStart } from '../../tools/operator/paymentsRetry';
import { TcpProxy } from '../../tools/local/TcpProxy';
import { useAzurite } from '../support/azurite';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';
import { inMemoryTelemetry } from '../support/telemetry';

const azuriteOf = useAzurite();
// durable-functions' own client class (its typings export only the interface; `df.getClient` builds it from a context).
const { DurableClient } = require('durable-functions/lib/src/durableClient/DurableClient') as { DurableClient: new (data: unknown) => unknown };
const DAY_MS = 86_400_000;
const payment = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });
const body = (id: string) => JSON.stringify(payment(id));
type Real = Awaited<ReturnType<typeof startRealEnginePayments>>;
const keyOf = (id: string) => keyFromMessageId('payments', id);

async function withEngine(
  options: { keyMemoryMs?: number; leaseMs?: number; tableConnection?: string },
  run: (real: Real, provider: FakePaymentProvider, settings: Settings, table: (name: string) => TableClient) => Promise<void>,
): Promise<void> {
  const provider = await FakePaymentProvider.start({ keyMemoryMs: options.keyMemoryMs });
  const prefix = `a${Date.now().toString(36)}`;
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: options.tableConnection ?? azuriteOf().connectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    PAYMENT_PROVIDER_URL: provider.url,
    PAYMENT_PROVIDER_TIMEOUT_MS: '5000',
    PAYMENTS_DESIGN: 'handoff',
    // The app declares what the fake provider does: a provider that keeps no keys is looked up before every call.
    ...(options.keyMemoryMs === 0 ? { PAYMENT_PROVIDER_KEY_MEMORY_HOURS: '0', PAYMENT_PROVIDER_LOOKUP: 'by-key' } : {}),
  });
  // The test reads and writes the consumer's table directly (never through an outage).
  const table = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
  const real = await startRealEnginePayments({ settings, overrides: { tableClient: table, leaseMs: options.leaseMs ?? 60_000, design: 'handoff' } });
  try {
    await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
    await run(real, provider, settings, table);
  } finally {
    await real.close();
    await provider.stop();
  }
}

/** One tick of the expiry timer as registered (timer trigger + Durable client input), at `nowMs`. */
async function tick(
  real: Real,
  settings: Settings,
  table: (name: string) => TableClient,
  nowMs: number,
  extra: { held?: string[]; telemetry?: ReturnType<typeof inMemoryTelemetry> } = {},
) {
  const holds = [{ name: 'test dead-letter queue', heldKeys: async (): Promise<IdempotencyKey[]> => (extra.held ?? []).map(keyOf) }];
  const handler = expiryTimerFromSettings(settings, { tableClient: table, clock: { nowMs: () => nowMs }, holds, telemetry: extra.telemetry?.telemetry });
  const host = WorkerHost.load(() => app.timer('expiryTimer', { schedule: '0 */15 * * * *', extraInputs: [df.input.durableClient()], handler }));
  await host.invoke('expiryTimer', {
    inputData: [
      { name: host.bindingName('expiryTimer', 'timerTrigger'), data: { json: JSON.stringify({ isPastDue: false }) } },
      { name: host.bindingName('expiryTimer', 'durableClient'), data: { string: real.backend.engine.clientBindingData } },
    ],
  });
}

async function paymentRowOf(real: Real, id: string): Promise<Record<string, unknown> | undefined> {
  const address = real.parts.store.addressOf(keyOf(id));
  return real.parts.store.client.getEntity<Record<string, unknown>>(address.partitionKey, `${address.rowKey}~payment`).catch(() => undefined);
}

const rpcOf = (real: Real) => (JSON.parse(real.backend.engine.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl;

async function instanceOf(real: Real, id: string): Promise<{ instanceId: string; entityKey: string }> {
  const record = await real.parts.store.get(keyOf(id));
  if (!record) throw new Error(`no record for ${id}`);
  const entityKey = chargeEntityKey(record.recordId, record.createdAtMs, record.digest);
  return { instanceId: chargeInstanceId(entityKey), entityKey };
}

/** Rows of the hub's Instances table for the orchestration and the entity (the purge removes them). */
async function hubRows(real: Real, entityKey: string): Promise<{ orchestration: boolean; entity: boolean }> {
  const keys = new Set<string>();
  for await (const r of real.backend.hubTable('Instances').listEntities<{ partitionKey: string }>({ queryOptions: { select: ['PartitionKey'] } }))
    keys.add(r.partitionKey);
  return { orchestration: keys.has(chargeInstanceId(entityKey)), entity: keys.has(`@paymentcharge@${entityKey}`) };
}

/** How many times the run scheduled the `completePaymentRecord` activity (its History rows), in all and in the execution with the most. */
async function recordWriteRows(real: Real, instanceId: string): Promise<{ all: number; mostInOneExecution: number }> {
  const byExecution = new Map<string, number>();
  const rows = real.backend.hubTable('History').listEntities<{ EventType?: string; Name?: string; ExecutionId?: string }>({
    queryOptions: { filter: `PartitionKey eq '${instanceId}' and EventType eq 'TaskScheduled' and Name eq 'completePaymentRecord'` },
  });
  for await (const row of rows) byExecution.set(String(row.ExecutionId), (byExecution.get(String(row.ExecutionId)) ?? 0) + 1);
  const counts = [...byExecution.values()];
  return { all: counts.reduce((a, b) => a + b, 0), mostInOneExecution: Math.max(0, ...counts) };
}

/** How many times the run scheduled the `completePaymentRecord` activity in its history now. */
async function recordWriteTries(real: Real, instanceId: string): Promise<number> {
  return (await recordWriteRows(real, instanceId)).all;
}

realEngineTest(
  'real engine: a storage outage longer than the old record-write budget (8 tries, > 127 s) during the run record write is ridden out on durable timers, continuing as new every 4 tries (no execution history holds more): the record completes, 0 lost, 1 charge',
  async () => {
    const proxy = await TcpProxy.start(azuriteOf().port);
    const throughProxy = azuriteOf().connectionString.replace(`127.0.0.1:${azuriteOf().port}`, `127.0.0.1:${proxy.port}`);
    try {
      await withEngine({ tableConnection: throughProxy }, async (real, provider) => {
        // The run as the trigger starts it (claim, then the lifetime's instance with the claim), with the record
        // write's timers capped at 4 s instead of 5 min, so that many tries fit in the outage (the default's
        // delays are the unit test's: 1, 2, 4 ... 256, 300 s).
        const key = keyOf('pay-o1');
        const claimed = await real.parts.store.claim(key, payloadDigest(payment('pay-o1')), { effects: [pendingRow(payment('pay-o1'), 'pending')] });
        if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
        const { claim } = claimed;
        const entityKey = chargeEntityKey(claim.recordId, claim.createdAtMs, claim.digest);
        const instanceId = chargeInstanceId(entityKey);
        // Version 2 as the starters write it: the charge activity's own write fails in the outage (unwritten), then the
        // durable-timer loop of completePaymentRecord rides it out.
        const handoff = {
          version: HANDOFF_VERSION,
          claim,
          retry: { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 5_000 },
          recordRetry: { budgetMs: 7 * DAY_MS, firstDelayMs: 1_000, maxDelayMs: 4_000 },
          // Continues as new every 4 record-write tries (the app's 20, scaled to the outage): the history stays bounded.
          recordRoundsPerExecution: 4,
        };
        provider.setLatency(2_000); // the run is at the provider when storage goes away
        const input = { idempotencyKey: 'pay-o1', entityKey, digest: claim.digest, attempt: 1, payment: payment('pay-o1'), handoff };
        await expect(durableHttpStart(rpcOf(real))(instanceId, input)).resolves.toBe('started');
        // Storage goes away while the call is at the provider: after the activity's fence read (it charges only while
        // the record is in progress under its claim: recordMovedOn), before its record write.
        for (let waited = 0; provider.rawCalls === 0; waited += 50) {
          if (waited > 300_000) throw new Error('the run did not call the provider within 5 min');
          await new Promise((r) => setTimeout(r, 50));
        }
        proxy.cut();
        const cutAt = Date.now();
        // Hold the outage past the old budget: more than 8 tries, and longer than its 127 s of backoff. The tries made by
        // earlier executions are in the run's input (`recordWrite.round`: continueAsNew carries them).
        const client = new DurableClient(JSON.parse(real.backend.engine.clientBindingData)) as df.DurableClient;
        const carried = async () => ((await client.getStatus(instanceId)).input as { recordWrite?: { round: number } }).recordWrite?.round ?? 0;
        let longestHistory = 0;
        let historyRowsSeen = 0;
        for (;;) {
          await new Promise((r) => setTimeout(r, 5_000));
          const rows = await recordWriteRows(real, instanceId);
          const inHistory = rows.all;
          longestHistory = Math.max(longestHistory, rows.mostInOneExecution);
          historyRowsSeen = Math.max(historyRowsSeen, rows.all);
          if (Date.now() - cutAt >= 140_000 && (await carried()) + inHistory >= 9) break;
          if (Date.now() - cutAt > 900_000) throw new Error('the run did not try the record write 9 times in 15 min');
        }
        const carriedInOutage = await carried();
        const triesInOutage = carriedInOutage + (await recordWriteTries(real, instanceId));
        expect(provider.chargesFor('pay-o1')).toBe(1);
        expect(await real.parts.store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });
        expect(await real.backend.store.failedInstances()).toEqual([]); // the old budget would have failed it by now
        expect(await real.backend.store.unfinishedInstances()).toEqual([instanceId]);
        proxy.restore();
        const outageMs = Date.now() - cutAt;
        await real.workflow.drain(600_000);
        const tries = (await carried()) + (await recordWriteTries(real, instanceId));
        console.log(
          `outage ${outageMs} ms: ${triesInOutage} record-write tries failed in it, ${tries} in all; ${carriedInOutage} carried by continueAsNew; longest execution history ${longestHistory} tries (at most ${historyRowsSeen} rows read at once); ${proxy.resets} connections reset`,
        );
        // The last try counted in the outage may be the one that succeeds (scheduled before the restore, run after it).
        expect(tries).toBeGreaterThanOrEqual(triesInOutage);
        expect(triesInOutage).toBeGreaterThanOrEqual(9); // more than the old budget's 8
        // Bounded: the run continued as new (its input carries the tries) and no execution's history held more than 4.
        expect(carriedInOutage).toBeGreaterThanOrEqual(4);
        expect(longestHistory).toBeLessThanOrEqual(4);
        expect(await real.parts.store.get(key)).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'succeeded' } });
        expect(await paymentRowOf(real, 'pay-o1')).toMatchObject({ state: 'succeeded' });
        expect(provider.chargesFor('pay-o1')).toBe(1);
        expect(await real.backend.store.failedInstances()).toEqual([]);
        expect(await real.backend.store.unfinishedInstances()).toEqual([]);
      });
    } finally {
      await proxy.stop();
    }
  },
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  'real engine: a run terminated by the operator after the ack is found by the reconciler (no new delivery), counted payments.reconciled, restarted under a takeover that looks the charge up: 1 charge, record completed',
  () =>
    withEngine({ keyMemoryMs: 0, leaseMs: 2_000 }, async (real, provider, settings, table) => {
      provider.setLatency(4_000);
      // The call charges and its connection drops: the activity gets no answer, so it writes no record (handoff version 2:
      // an activity that got the provider's answer writes the record itself, even for a run terminated meanwhile).
      provider.injectNext('chargeThenDrop');
      expect(await real.deliver(body('pay-t1'), { messageId: 'pay-t1', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff', attempt: 1 });
      const { instanceId, entityKey } = await instanceOf(real, 'pay-t1');
      // The operator terminates the run while its provider call is out (the call still charges: an activity is not stopped).
      for (let i = 0; i < 300 && provider.rawCalls === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(provider.rawCalls).toBe(1);
      expect((await fetch(`${rpcOf(real)}instances/${instanceId}/terminate?reason=operator`, { method: 'POST' })).status).toBe(202);
      await real.workflow.drain();
      for (let i = 0; i < 100 && provider.chargesFor('pay-t1') === 0; i++) await new Promise((r) => setTimeout(r, 200));
      expect(provider.chargesFor('pay-t1')).toBe(1);
      expect(await real.parts.store.get(keyOf('pay-t1'))).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });

      // A tick now: inside the grace (5 min past the lease), nothing is touched.
      const recorded = inMemoryTelemetry();
      await tick(real, settings, table, Date.now(), { telemetry: recorded });
      expect(await recorded.counter('payments.reconciled')).toBe(0);
      // A tick 10 minutes on: the reconciler finds it, restarts it (attempt 2), counts and logs it.
      await tick(real, settings, table, Date.now() + 10 * 60_000, { telemetry: recorded });
      expect(await recorded.counter('payments.reconciled', { reason: 'run-terminated' })).toBe(1);
      const line = recorded.logs().find((l) => l.attributes.outcome === 'reconciled');
      expect(line).toMatchObject({ severity: 'ERROR', attributes: { idempotencyKey: 'pay-t1', reason: 'run-terminated', attempt: 2 } });
      await real.workflow.drain(300_000);
      expect(await real.parts.store.get(keyOf('pay-t1'))).toMatchObject({ status: 'COMPLETED', attempt: 2, result: { status: 'succeeded' } });
      // The run tells the entity one-way (handoff version 2): read it once it has applied the signal.
      expect(await real.workflow.entityStateWhen(entityKey, (state) => state?.status === 'completed')).toMatchObject({ status: 'completed', attempt: 2 });
      expect(provider.chargesFor('pay-t1')).toBe(1); // the provider had forgotten the key: only the look-up kept it at 1
      expect(provider.lookups).toBeGreaterThanOrEqual(1);
      // Settled: the next tick finds nothing.
      await tick(real, settings, table, Date.now() + 20 * 60_000, { telemetry: recorded });
      expect(await recorded.counter('payments.reconciled')).toBe(1);
      console.log(`reconciler: 1 terminated run restarted, ${provider.chargesFor('pay-t1')} charge, ${provider.lookups} look-up(s)`);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  'real engine: the purge keeps the orchestration and entity of a record held past retention (an unheld one goes); a takeover whose entity is gone looks the charge up, never charges blind',
  () =>
    withEngine({ keyMemoryMs: 0, leaseMs: 2_000 }, async (real, provider, settings, table) => {
      for (const id of ['pay-h1', 'pay-h2']) expect(await real.deliver(body(id), { messageId: id, deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
      await real.workflow.drain();
      const held = await instanceOf(real, 'pay-h1');
      const free = await instanceOf(real, 'pay-h2');
      expect(await hubRows(real, held.entityKey)).toEqual({ orchestration: true, entity: true });
      expect(await hubRows(real, free.entityKey)).toEqual({ orchestration: true, entity: true });

      // The extension's own answers: a status read without the input, and the instance query one page (top) at a time.
      const client = new DurableClient(JSON.parse(real.backend.engine.clientBindingData)) as df.DurableClient;
      expect((await client.getStatus(held.instanceId, { showInput: false })).input).toMatchObject({ idempotencyKey: 'pay-h1' }); // dropped by the client
      expect((await client.getStatus(held.instanceId, statusWithoutInput(client))).input).toBeNull();
      const keepAll = await purgeDurableRecords(client, {
        cutoffMs: Date.now() + 31 * DAY_MS,
        budgetMs: 60_000,
        clock: { nowMs: () => 0 },
        pageSize: 1,
        recordLive: async () => true,
      });
      expect(keepAll).toMatchObject({ found: 2, keptLive: 2, orchestrations: 0, entities: 0, stoppedByBudget: false });
      expect(keepAll.pages).toBeGreaterThanOrEqual(2);
      console.log(`purge page query on the extension: top=1 read ${keepAll.pages} pages for ${keepAll.found} instances`);

      // 31 days on, pay-h1 still in the dead-letter queue (held): its record stays, and so do its run and entity.
      await tick(real, settings, table, Date.now() + 31 * DAY_MS, { held: ['pay-h1'] });
      expect(await real.parts.store.get(keyOf('pay-h1'))).toMatchObject({ status: 'COMPLETED' });
      expect(await real.parts.store.get(keyOf('pay-h2'))).toBeUndefined();
      expect(await hubRows(real, held.entityKey)).toEqual({ orchestration: true, entity: true });
      expect(await hubRows(real, free.entityKey)).toEqual({ orchestration: false, entity: false });

      // A record whose attempt 1 charged and whose entity is gone (purged before this rule, or a lost hub): the
      // redelivery takes it over (attempt 2); the idle entity answers uncertain, the run looks the charge up.
      const key = keyOf('pay-h3');
      const claimed = await real.parts.store.claim(key, payloadDigest(payment('pay-h3')));
      if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
      const direct = new PaymentProviderClient({ baseUrl: settings.PAYMENT_PROVIDER_URL!, timeoutMs: 5_000 });
      await direct.charge(payment('pay-h3'), 'pay-h3');
      await new Promise((r) => setTimeout(r, 2_100)); // the lease lapses
      expect(await real.deliver(body('pay-h3'), { messageId: 'pay-h3', deliveryCount: 2 })).toMatchObject({ outcome: 'handedOff', attempt: 2 });
      await real.workflow.drain();
      expect(await real.parts.store.get(key)).toMatchObject({ status: 'COMPLETED', attempt: 2, result: { status: 'succeeded' } });
      expect(provider.chargesFor('pay-h3')).toBe(1);
      expect(provider.lookups).toBeGreaterThanOrEqual(1);
      for (const id of ['pay-h1', 'pay-h2']) expect(provider.chargesFor(id)).toBe(1);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  'real engine: a run started with attempt 1 after the record was taken over by attempt 2 (attempt 2 start dropped as a duplicate) is fenced; the reconciler reads its input attempt and restarts it as run-superseded (a warning, not the sev-1 page): 1 charge, record completed',
  () =>
    withEngine({ leaseMs: 2_000 }, async (real, provider, settings, table) => {
      // Attempt 1 claims; its lease lapses and attempt 2 takes the record over; only attempt 1's start reaches the task
      // hub (attempt 2's was accepted and dropped: the provider's start is check-then-act, issue 43 item 7).
      const key = keyOf('pay-s1');
      const digest = payloadDigest(payment('pay-s1'));
      const first = await real.parts.store.claim(key, digest, { effects: [pendingRow(payment('pay-s1'), 'pending')] });
      if (first.kind !== 'claimed') throw new Error(first.kind);
      await new Promise((r) => setTimeout(r, 2_100)); // the lease lapses
      const second = await real.parts.store.claim(key, digest, { effects: [pendingRow(payment('pay-s1'), 'pending')] });
      if (second.kind !== 'reclaimed') throw new Error(second.kind);
      expect(second.claim.attempt).toBe(2);
      const claim = first.claim;
      const entityKey = chargeEntityKey(claim.recordId, claim.createdAtMs, claim.digest);
      const instanceId = chargeInstanceId(entityKey);
      const handoff = { version: HANDOFF_VERSION, claim, retry: { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 5_000 } };
      const input = { idempotencyKey: 'pay-s1', entityKey, digest: claim.digest, attempt: 1, payment: payment('pay-s1'), handoff };
      await expect(durableHttpStart(rpcOf(real))(instanceId, input)).resolves.toBe('started');
      await real.workflow.drain();
      // The run's activity was fenced before the provider (the record moved on to attempt 2): nothing charged, nothing
      // written; the run completed and the record stays attempt 2's, in progress, with no run of its own.
      expect(provider.rawCalls).toBe(0);
      expect(await real.parts.store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2 });

      const recorded = inMemoryTelemetry();
      await tick(real, settings, table, Date.now() + 10 * 60_000, { telemetry: recorded });
      expect(await recorded.counter('payments.reconciled', { reason: 'run-superseded' })).toBe(1);
      expect(await recorded.counter('payments.reconciled', { reason: 'run-completed-record-open' })).toBe(0);
      const line = recorded.logs().find((l) => l.attributes.outcome === 'reconciled');
      expect(line).toMatchObject({ severity: 'WARN', attributes: { idempotencyKey: 'pay-s1', reason: 'run-superseded', attempt: 3, previousAttempt: 2 } });
      await real.workflow.drain(300_000);
      // The restarted run (attempt 3): its entity's begin is uncertain (attempt 1 ended failed, fenced), so it re-sends the
      // same key inside the provider's key memory: one charge in all.
      expect(await real.parts.store.get(key)).toMatchObject({ status: 'COMPLETED', attempt: 3, result: { status: 'succeeded' } });
      expect(await paymentRowOf(real, 'pay-s1')).toMatchObject({ state: 'succeeded' });
      expect(provider.chargesFor('pay-s1')).toBe(1);
      console.log(`superseded run: reconciled as run-superseded (WARN), ${provider.chargesFor('pay-s1')} charge, record attempt 3`);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  "real engine: the reconciler's listing goes stale (the run records the payment failed and completes between the listing and the status read): the takeover of the record as listed is refused, never reopened, never charged",
  () =>
    withEngine({ leaseMs: 2_000 }, async (real, provider, settings) => {
      // A run whose provider fails for its whole (short) budget: it records the payment failed and completes.
      const key = keyOf('pay-r1');
      const claimed = await real.parts.store.claim(key, payloadDigest(payment('pay-r1')), { effects: [pendingRow(payment('pay-r1'), 'pending')] });
      if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
      const { claim } = claimed;
      const entityKey = chargeEntityKey(claim.recordId, claim.createdAtMs, claim.digest);
      const instanceId = chargeInstanceId(entityKey);
      await new Promise((r) => setTimeout(r, 2_100)); // the lease lapses: the reconciler may list it
      // What the reconciler listed: the record in progress, as the lapsed-records query read it.
      const listed = await real.parts.store.get(key);
      expect(listed).toMatchObject({ status: 'IN_PROGRESS', attempt: 1 });
      provider.setFaultRates({ error5xx: 1 }); // every call 503 until the budget is spent
      // A short call lease: a failure the run writes waits out the last announced call's lease (decision 0033), which at
      // the default 3 min would outlast the drain.
      const handoff = { version: HANDOFF_VERSION, claim, retry: { budgetMs: 3_000, firstDelayMs: 500, maxDelayMs: 1_000, callLeaseMs: 1_500 } };
      const input = { idempotencyKey: 'pay-r1', entityKey, digest: claim.digest, attempt: 1, payment: payment('pay-r1'), handoff };
      await expect(durableHttpStart(rpcOf(real))(instanceId, input)).resolves.toBe('started');
      await real.workflow.drain();
      provider.setFaultRates({ error5xx: 0 });
      const settled = await real.parts.store.get(key);
      expect(settled).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'failed' } });
      expect(provider.chargesFor('pay-r1')).toBe(0);

      // The pass reads the run now: Completed. The restart takes the record over only as listed: refused.
      const client = new DurableClient(JSON.parse(real.backend.engine.clientBindingData)) as df.DurableClient;
      const recorded = inMemoryTelemetry();
      const report = await reconcileOn({
        records: async function* () {
          yield listed!;
        },
        client,
        store: real.parts.store,
        settings,
        telemetry: recorded.telemetry,
        clock: { nowMs: () => Date.now() + 10 * 60_000 },
        budgetMs: 60_000,
      });
      expect(report).toMatchObject({ scanned: 1, refused: 1, resolved: [] });
      expect(await recorded.counter('payments.reconciled')).toBe(0);
      await real.workflow.drain();
      expect(await real.parts.store.get(key)).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'failed' } });
      expect(await paymentRowOf(real, 'pay-r1')).toMatchObject({ state: 'failed' });
      expect(provider.chargesFor('pay-r1')).toBe(0);
      // No new execution: the run is the one that recorded the failure.
      expect((await client.getStatus(instanceId)).input).toMatchObject({ attempt: 1 });
      console.log(`stale listing: refused ${report.refused}, reconciled 0, charges ${provider.chargesFor('pay-r1')}, record failed`);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);
