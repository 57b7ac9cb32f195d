/**
 * The handoff design (docs/DESIGN.md "Payments: hand off, don't hold") on the REAL Durable engine
 * (tools/durable-host: the Durable Task extension with its Azure Storage provider, on Azurite): the registered
 * trigger claims, starts the lifetime's orchestration through the extension's HTTP API and is acknowledged with
 * no status poll (counted on that API through a pass-through); the built app's `completePaymentRecord` activity,
 * run by the engine's worker, completes the consumer's record. Crashes between the steps, duplicates, takeover
 * fencing, host kills and a spent retry budget, against the fake provider's ledger. Tests run one after another
 * (the extension's fixed port 17071; `DurableEngineHost` holds a machine-wide lock).
 */
import { TableClient } from '@azure/data-tables';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadSettings } from '../../src/config/settings';
import { payloadDigest } from 'azure-functions-idempotency/internal';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import type { RetryBudget } from '../../src/payments/chargeOrchestration';
import { paymentRow as paymentRowEffect } from '../../src/payments/paymentRow';
import type { ProviderLookup } from '../../src/payments/providerLookup';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { startRealEnginePayments, type RealEnginePaymentsOptions } from '../../tools/local/durable/realEnginePayments';
import { durableHttpStart, runPaymentsRetry } from '../../tools/operator/paymentsRetry';
import { useAzurite } from '../support/azurite';
import { REAL_ENGINE_TIMEOUT_MS, realEngineTest } from '../support/realEngine';

const azuriteOf = useAzurite();
const payment = (id: string) => ({ paymentId: id, customerId: 'cust-1', amount: 1250, currency: 'EUR' });
const body = (id: string) => JSON.stringify(payment(id));
type Real = Awaited<ReturnType<typeof startRealEnginePayments>>;

/** A pass-through to the extension's HTTP API counting the client's starts (POST orchestrators/...) and status reads (GET instances/...). */
async function countingProxy(target: string) {
  const counts = { starts: 0, statusReads: 0 };
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (req.method === 'GET' && /\/instances\//.test(path)) counts.statusReads++;
    if (req.method === 'POST' && /\/orchestrators\//.test(path)) counts.starts++;
    let text = '';
    req.on('data', (c: Buffer) => (text += String(c)));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
      fetch(new URL(path, target), { method: req.method, headers, body: req.method === 'GET' ? undefined : text }).then(
        async (answer) => res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text()),
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { counts, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(r)) };
}

async function withHandOffEngine(
  options: {
    leaseMs?: number;
    retry?: RetryBudget;
    killAfterCharge?: (paymentId: string) => boolean;
    /** The provider's key memory (default forever); `PAYMENT_PROVIDER_LOOKUP` and `_KEY_MEMORY_HOURS` (default the settings'). */
    keyMemoryMs?: number;
    providerLookup?: ProviderLookup;
    declaredKeyMemoryHours?: number;
    /** The worker's record table behind a gate, and the engine stopped at a step of its task hub: see `startRealEnginePayments`. */
    workerTable?: RealEnginePaymentsOptions['workerTable'];
    onEngineStorage?: RealEnginePaymentsOptions['onEngineStorage'];
  },
  run: (real: Real, provider: FakePaymentProvider, counts: { starts: number; statusReads: number }) => Promise<void>,
): Promise<void> {
  const provider = await FakePaymentProvider.start({ keyMemoryMs: options.keyMemoryMs });
  const proxy = await countingProxy('http://127.0.0.1:17071');
  const prefix = `h${Date.now().toString(36)}`;
  const settings = loadSettings({
    IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
    IDEMPOTENCY_CACHE_SIZE: '0',
    PAYMENT_PROVIDER_URL: provider.url,
    PAYMENT_PROVIDER_TIMEOUT_MS: '5000',
    PAYMENT_PROVIDER_LOOKUP: options.providerLookup,
    PAYMENT_PROVIDER_KEY_MEMORY_HOURS: options.declaredKeyMemoryHours === undefined ? undefined : String(options.declaredKeyMemoryHours),
  });
  const table = (name: string) => TableClient.fromConnectionString(azuriteOf().connectionString, `${prefix}${name}`, { allowInsecureConnection: true });
  const real = await startRealEnginePayments({
    settings,
    overrides: { tableClient: table, leaseMs: options.leaseMs ?? 60_000, design: 'handoff', retry: options.retry },
    killAfterCharge: options.killAfterCharge,
    workerTable: options.workerTable,
    onEngineStorage: options.onEngineStorage,
    clientBinding: (client) => JSON.stringify({ ...(JSON.parse(client) as object), rpcBaseUrl: `${proxy.url}/durabletask/` }),
  });
  try {
    await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
    await run(real, provider, proxy.counts);
  } finally {
    await real.close();
    await proxy.close();
    await provider.stop();
  }
}

async function paymentRow(real: Real, id: string): Promise<Record<string, unknown> | undefined> {
  const address = real.parts.store.addressOf(keyFromMessageId('payments', id));
  return real.parts.store.client.getEntity<Record<string, unknown>>(address.partitionKey, `${address.rowKey}~payment`).catch(() => undefined);
}

/** Delivers until the trigger returns (a throw abandons the message: Service Bus redelivers it, deliveryCount + 1). */
async function deliverUntilAcked(real: Real, id: string, firstDeliveryCount = 1) {
  const errors: string[] = [];
  for (let deliveryCount = firstDeliveryCount; deliveryCount < firstDeliveryCount + 10; deliveryCount++) {
    try {
      return await real.deliver(body(id), { messageId: id, deliveryCount });
    } catch (error) {
      errors.push(String((error as Error)?.message ?? error));
    }
  }
  throw new Error(`not acknowledged after 10 deliveries: ${errors.join(' | ')}`);
}

/** True the first time it is asked about `paymentId`, false after (one kill, then the engine must recover). */
function onceFor(paymentId: string): (id: string) => boolean {
  let done = false;
  return (id) => id === paymentId && !done && (done = true);
}

const rpcOf = (real: Real) => (JSON.parse(real.backend.engine.clientBindingData) as { rpcBaseUrl: string }).rpcBaseUrl;

realEngineTest(
  'real engine, handoff: fresh payments are acknowledged after one start and no status poll; the engine-run activity completes record and Payment row; a lost ack and concurrent duplicates are acknowledged at once; one charge each',
  () =>
    withHandOffEngine({}, async (real, provider, counts) => {
      provider.setLatency(1_500); // the runs are still charging while the duplicates come
      expect(await real.deliver(body('pay-r1'), { messageId: 'pay-r1', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff', attempt: 1 });
      expect(counts).toEqual({ starts: 1, statusReads: 0 });
      // The run waits on the provider's 1.5 s answer: the drain's query sees it unfinished (and no entity).
      expect(await real.backend.store.unfinishedInstances()).toHaveLength(1);
      // The ack was lost: the redelivery finds the record in progress and the orchestration started.
      expect(await real.deliver(body('pay-r1'), { messageId: 'pay-r1', deliveryCount: 2 })).toMatchObject({ outcome: 'inProgress', attempt: 1 });
      const concurrent = await Promise.all(Array.from({ length: 5 }, () => deliverUntilAcked(real, 'pay-r2')));
      expect(concurrent.filter((r) => r.outcome === 'handedOff')).toHaveLength(1);
      expect(concurrent.every((r) => ['handedOff', 'inProgress', 'duplicate'].includes(r.outcome))).toBe(true);
      expect(counts.starts).toBe(2);
      await real.workflow.drain();
      for (const id of ['pay-r1', 'pay-r2']) {
        const record = await real.parts.store.get(keyFromMessageId('payments', id));
        expect(record).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'succeeded' } });
        expect(await paymentRow(real, id)).toMatchObject({ state: 'succeeded', chargeId: (record!.result as { chargeId: string }).chargeId });
        expect(provider.chargesFor(id)).toBe(1);
      }
      expect(await real.deliver(body('pay-r1'), { messageId: 'pay-r1', deliveryCount: 3 })).toMatchObject({
        outcome: 'duplicate',
        result: { status: 'succeeded' },
      });
      expect(await real.backend.store.failedInstances()).toEqual([]);
      expect(await real.backend.store.unfinishedInstances()).toEqual([]);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  "real engine, handoff: a crash between claim and start is finished by the redelivery (takeover, attempt 2); an old attempt's run never overwrites the record a takeover holds, and the redelivery completes it without a second charge",
  () =>
    withHandOffEngine({ leaseMs: 3_000 }, async (real, provider) => {
      // Crash between the claim and the start.
      const claim = real.parts.store.claim.bind(real.parts.store);
      let crashed = false;
      real.parts.store.claim = async (key, digest, options) => {
        const outcome = await claim(key, digest, options);
        if (!crashed && outcome.kind === 'claimed' && key.key === 'pay-r3') {
          crashed = true;
          throw new Error('injected crash after the claim, before the start');
        }
        return outcome;
      };
      await expect(real.deliver(body('pay-r3'), { messageId: 'pay-r3', deliveryCount: 1 })).rejects.toThrow('injected crash');
      expect(await deliverUntilAcked(real, 'pay-r3', 2)).toMatchObject({ outcome: 'handedOff', attempt: 2 });

      // Takeover fencing: attempt 1's run is started after attempt 2 took the record over.
      const key = keyFromMessageId('payments', 'pay-r4');
      const digest = payloadDigest(payment('pay-r4'));
      const first = await claim(key, digest);
      if (first.kind !== 'claimed') throw new Error(first.kind);
      await new Promise((resolve) => setTimeout(resolve, 3_100));
      const second = await claim(key, digest);
      if (second.kind !== 'reclaimed') throw new Error(second.kind);
      const entityKey = chargeEntityKey(first.claim.recordId, first.claim.createdAtMs, first.claim.digest);
      const instanceId = chargeInstanceId(entityKey);
      const retry = { budgetMs: 60_000, firstDelayMs: 1_000, maxDelayMs: 5_000 };
      const start = durableHttpStart(rpcOf(real));
      await expect(
        start(instanceId, { idempotencyKey: 'pay-r4', entityKey, digest, attempt: 1, payment: payment('pay-r4'), handoff: { claim: first.claim, retry } }),
      ).resolves.toBe('started');
      await real.workflow.drain();
      // The run charged and recorded on the entity; its record write was fenced: the record is attempt 2's, unchanged.
      expect(await real.workflow.entityState(entityKey)).toMatchObject({ status: 'completed', attempt: 1 });
      expect(await real.parts.store.get(key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2, etag: second.claim.etag });
      // Attempt 2's message comes back: no orchestration runs, so the lease rules: it takes over (attempt 3) and its run answers from the entity.
      expect(await deliverUntilAcked(real, 'pay-r4', 2)).toMatchObject({ outcome: 'handedOff', attempt: 3 });
      await real.workflow.drain();
      for (const [id, attempt] of [
        ['pay-r3', 2],
        ['pay-r4', 3],
      ] as const) {
        expect(await real.parts.store.get(keyFromMessageId('payments', id))).toMatchObject({ status: 'COMPLETED', attempt, result: { status: 'succeeded' } });
        expect(await paymentRow(real, id)).toMatchObject({ state: 'succeeded' });
        expect(provider.chargesFor(id)).toBe(1);
      }
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  'real engine, handoff: the host is killed after the provider charged, before the engine recorded it; after the restart the run charges again with the same key (one charge) and completes the record',
  () =>
    withHandOffEngine({ killAfterCharge: onceFor('pay-r5') }, async (real, provider) => {
      expect(await real.deliver(body('pay-r5'), { messageId: 'pay-r5', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
      await real.workflow.drain(300_000);
      expect(real.backend.counters.crashes).toBeGreaterThanOrEqual(1);
      expect(real.backend.counters.restarts).toBeGreaterThanOrEqual(1);
      expect(provider.rawCalls).toBeGreaterThanOrEqual(2);
      expect(provider.chargesFor('pay-r5')).toBe(1);
      expect(await real.parts.store.get(keyFromMessageId('payments', 'pay-r5'))).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded' } });
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  "real engine, handoff: transient failures past the retry budget end the payment held for an operator (no look-up: only the provider can say whether a call charged) with its reason on entity, record and Payment row, never redelivered, never charged; the operator checks the key at the provider and retries (npm run payments:retry --checked-at-provider, over the extension's HTTP API): attempt 2 charges it once; a payment that did not fail is refused",
  () =>
    // A short call lease (as the suspended-run test below): a hold waits out the last announced call's lease (decision
    // 0033), which at the default 3 min would outlast the drain.
    withHandOffEngine({ retry: { budgetMs: 1_000, firstDelayMs: 500, maxDelayMs: 500, callLeaseMs: 1_500 } }, async (real, provider) => {
      provider.setFaultRates({ error5xx: 1 });
      expect(await real.deliver(body('pay-r6'), { messageId: 'pay-r6', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
      await real.workflow.drain(300_000);
      const record = await real.parts.store.get(keyFromMessageId('payments', 'pay-r6'));
      expect(record).toMatchObject({ status: 'COMPLETED', attempt: 1, result: { status: 'failed', code: 'held-for-operator' } });
      const reason = (record!.result as { reason: string }).reason;
      expect(reason).toMatch(/held for an operator: the retry budget is spent/);
      expect(await paymentRow(real, 'pay-r6')).toMatchObject({ state: 'failed', reason });
      const entityKey = chargeEntityKey(record!.recordId, record!.createdAtMs, record!.digest);
      // The run tells the entity one-way (handoff version 2): read it once it has applied the signal.
      expect(await real.workflow.entityStateWhen(entityKey, (state) => state?.status !== 'inProgress')).toMatchObject({ status: 'failed', reason });
      expect(provider.chargesFor('pay-r6')).toBe(0);

      provider.setFaultRates({ error5xx: 0 });
      const env = {
        IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
        IDEMPOTENCY_TABLE_NAME: real.parts.store.client.tableName,
        IDEMPOTENCY_CACHE_SIZE: '0',
      };
      const lines: string[] = [];
      // The runbook for a held payment: the key checked at the provider (nothing charged: provider.chargesFor above), then retried.
      expect(await runPaymentsRetry(['--payment-id', 'pay-r6', '--durable-url', rpcOf(real), '--checked-at-provider'], env, (l) => lines.push(l))).toBe(0);
      expect(lines.join('\n')).toMatch(/retry started .*attempt 2.*it had failed: held for an operator: the retry budget is spent/);
      await real.workflow.drain(300_000);
      expect(await real.parts.store.get(keyFromMessageId('payments', 'pay-r6'))).toMatchObject({
        status: 'COMPLETED',
        attempt: 2,
        result: { status: 'succeeded' },
      });
      expect(await paymentRow(real, 'pay-r6')).toMatchObject({ state: 'succeeded' });
      expect(await real.workflow.entityStateWhen(entityKey, (state) => state?.status === 'completed')).toMatchObject({ status: 'completed', attempt: 2 });
      expect(provider.chargesFor('pay-r6')).toBe(1);
      expect(await runPaymentsRetry(['--payment-id', 'pay-r6', '--durable-url', rpcOf(real)], env, (l) => lines.push(l))).toBe(1);
      expect(lines.at(-1)).toMatch(/refused: payment pay-r6 did not fail \(succeeded\)/);
      expect(await real.backend.store.failedInstances()).toEqual([]);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  'real engine, handoff, a provider that keeps no keys (PAYMENT_PROVIDER_KEY_MEMORY_HOURS 0, PAYMENT_PROVIDER_LOOKUP by-key): a charge-then-drop, then the run retries (a new activity call that looks up), and a host kill after the charge (the engine re-runs the activity with its first input, which looks up too): one charge each',
  () =>
    withHandOffEngine({ keyMemoryMs: 0, providerLookup: 'by-key', declaredKeyMemoryHours: 0, killAfterCharge: onceFor('pay-r8') }, async (real, provider) => {
      provider.injectNext('chargeThenDrop');
      expect(await real.deliver(body('pay-r7'), { messageId: 'pay-r7', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
      await real.workflow.drain(300_000);
      expect(await real.deliver(body('pay-r8'), { messageId: 'pay-r8', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
      await real.workflow.drain(300_000);
      expect(real.backend.counters.crashes).toBe(1);
      for (const id of ['pay-r7', 'pay-r8']) {
        expect(provider.chargesFor(id)).toBe(1);
        const record = await real.parts.store.get(keyFromMessageId('payments', id));
        expect(record).toMatchObject({ status: 'COMPLETED', result: { status: 'succeeded' } });
        expect((record!.result as { chargeId: string }).chargeId).toBe(provider.charges.find((c) => c.paymentId === id)!.chargeId);
      }
      expect(provider.lookups).toBeGreaterThanOrEqual(4); // every call looked first: 2 for pay-r7, at least 2 for pay-r8
      expect(await real.backend.store.failedInstances()).toEqual([]);
    }),
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  "real engine, handoff (issue 51 item 2, on cue): the run's `failed` lands on the record between the provider activity's fence read and its call (written once the worker's read was answered, before the worker hears it): the call's conditional mark is refused, nothing is charged, the record stays failed; a fence that only read would have charged a payment recorded failed",
  () => {
    const cue: { settle?: () => Promise<void>; reads: number } = { reads: 0 };
    return withHandOffEngine(
      {
        workerTable: {
          answered: async (request, status) => {
            if (request.method !== 'GET' || status !== 200 || !cue.settle) return;
            cue.reads++;
            const settle = cue.settle;
            cue.settle = undefined;
            await settle();
          },
        },
      },
      async (real, provider) => {
        const key = keyFromMessageId('payments', 'pay-f1');
        // The run's settle, as it writes: `failed` on the version it read (exact), with the Payment row.
        cue.settle = async () => {
          const record = (await real.parts.store.get(key))!;
          const claim = { ...record, key, localRows: record.localRows };
          const failed = { status: 'failed' as const, reason: 'settled on cue: no charge found' };
          await real.parts.store.complete(claim, failed, [paymentRowEffect(payment('pay-f1'), 'failed', failed)], { exact: true });
        };
        expect(await real.deliver(body('pay-f1'), { messageId: 'pay-f1', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
        await real.workflow.drain(300_000);
        expect(cue.reads).toBe(1); // the cue ran: the worker's first read of the record was answered with the version before `failed`
        expect(provider.rawCalls).toBe(0);
        expect(provider.chargesFor('pay-f1')).toBe(0);
        expect(await real.parts.store.get(key)).toMatchObject({ status: 'COMPLETED', result: { status: 'failed', reason: 'settled on cue: no charge found' } });
        expect(await paymentRow(real, 'pay-f1')).toMatchObject({ state: 'failed' });
        expect(await real.backend.store.failedInstances()).toEqual([]);
      },
    );
  },
  REAL_ENGINE_TIMEOUT_MS,
);

realEngineTest(
  "real engine, handoff (issue 51 item 1, on cue): a worker stalls in the delete of a provider round's work item after its answer was sent, and dies once the run has spent its budget (503s), settled (its look-up found no charge) and recorded failed; the round's work item comes back after the visibility timeout and runs again while the record table answers 503 (throttled) and the provider is back: the copy cannot announce its call and charges nothing (a fence that failed open inside a window from scheduling charged here)",
  () => {
    const cue = { stalledId: '', workItemsSent: 0, copyDeleted: false, tableBusy: false, busyAnswers: 0 };
    return withHandOffEngine(
      {
        providerLookup: 'by-key',
        retry: { budgetMs: 5_000, firstDelayMs: 500, maxDelayMs: 1_000, callLeaseMs: 1_500 },
        onEngineStorage: (request) => {
          const item = request.service === 'queue' ? /-workitems\/messages(?:\/([^?]+))?/.exec(request.path) : null;
          if (item && request.method === 'POST') cue.workItemsSent++;
          if (!item || request.method !== 'DELETE') return 'pass';
          if (cue.stalledId === '') {
            cue.stalledId = item[1];
            return 'stall'; // round 1's answer is on its way; its delete never lands
          }
          if (item[1] === cue.stalledId) cue.copyDeleted = true;
          return 'pass';
        },
        workerTable: { verdict: () => (cue.tableBusy ? (cue.busyAnswers++, 'busy') : 'pass') },
      },
      async (real, provider) => {
        const key = keyFromMessageId('payments', 'pay-f2');
        provider.setFaultRates({ error5xx: 1 });
        expect(await real.deliver(body('pay-f2'), { messageId: 'pay-f2', deliveryCount: 1 })).toMatchObject({ outcome: 'handedOff' });
        await real.workflow.drain(300_000);
        const settled = await real.parts.store.get(key);
        const copyPending = cue.stalledId !== '' && !cue.copyDeleted;
        // The stalled worker dies; its item comes back after the visibility timeout, on the restarted host.
        cue.tableBusy = true;
        provider.setFaultRates({ error5xx: 0 });
        const callsAtFailed = provider.rawCalls;
        await real.backend.crashHost();
        const cap = Date.now() + 300_000;
        while (!cue.copyDeleted && Date.now() < cap) await new Promise((r) => setTimeout(r, 200));
        cue.tableBusy = false;
        // The premise: the run recorded failed before the copy ran; the copy ran (its work item deleted) and met the busy table.
        expect({ settled: settled?.status, copyPending, copyRan: cue.copyDeleted, busy: cue.busyAnswers > 0 }).toEqual({
          settled: 'COMPLETED',
          copyPending: true,
          copyRan: true,
          busy: true,
        });
        expect(await real.parts.store.get(key)).toMatchObject({ status: 'COMPLETED', result: { status: 'failed' } });
        expect(provider.rawCalls - callsAtFailed).toBe(0);
        expect(provider.chargesFor('pay-f2')).toBe(0);
      },
    );
  },
  REAL_ENGINE_TIMEOUT_MS,
);
