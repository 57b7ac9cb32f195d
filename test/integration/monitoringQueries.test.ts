import { RestError } from '@azure/core-rest-pipeline';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { providerFromSettings } from '../../src/app/payments';
import { loadSettings } from '../../src/config/settings';
import type { SweepReport } from 'azure-functions-idempotency/table';
import { recordSweepMetrics } from '../../src/lifecycle/sweepMetrics';
import { Outcome, reportOutcome } from '../../src/messaging/reportOutcome';
import { FakePaymentProvider } from '../../tools/fakeProvider/FakePaymentProvider';
import { InMemoryIdempotencyStore } from 'azure-functions-idempotency/internal';
import { paymentsApi } from '../../src/http/paymentsApi';
import type { PaymentStateTable } from '../../src/http/PaymentStateTable';
import { paymentWebhook } from '../../src/http/paymentWebhook';
import { signatureHeader } from '../../src/http/webhookSignature';
import { ParkingStore } from '../../src/messaging/ParkingStore';
import { RewardsConsumer } from '../../src/rewards/RewardsConsumer';
import { RewardsLedger } from '../../src/rewards/RewardsLedger';
import { useAzurite } from '../support/azurite';
import { freshTable } from '../support/tables';
import { inMemoryTelemetry } from '../support/telemetry';
import type { Telemetry } from '../../src/telemetry/Telemetry';

/**
 * Every `customDimensions.X` a query in infra/monitoring reads is an attribute the code really emits
 * for the metric (customMetrics) or the log lines (traces) it queries. What the code emits is
 * recorded here through in-memory exporters, by driving the real reporting paths: every consumer
 * outcome, one expiry sweep, and one provider call through the app's own provider wiring.
 */
const QUERIES = join(__dirname, '..', '..', 'infra', 'monitoring', 'queries');
const azuriteOf = useAzurite();

import { completeRecordActivity, heldReporter, writeRecordOnce } from '../../src/app/durableCharge';
import { outageReport } from '../../src/app/paymentsHandler';
import { StoreRequestError, StoreUnavailableError } from 'azure-functions-idempotency/internal';
import { reconcilePayments } from '../../src/app/paymentReconciler';
import { shardLayoutGate } from '../../src/app/shardLayoutGate';
import { runLedgerCheck } from '../../src/app/ledgerCheckTimer';
import { PaymentProviderClient } from '../../src/payments/PaymentProviderClient';

describe('monitoring queries read only what the code emits', () => {
  let emitted: { metrics: Map<string, Set<string>>; logAttributes: Set<string> };

  beforeAll(async () => {
    const t = inMemoryTelemetry();
    const info = { messageId: 'm-1', deliveryCount: 2, correlationId: 'c-1', enqueuedTimeUtc: '2026-11-30T00:00:00Z' };
    for (const outcome of Object.values(Outcome)) {
      reportOutcome(t.telemetry, {
        consumer: 'payments',
        outcome,
        info,
        idempotencyKey: 'm-1',
        digest: 'd'.repeat(64),
        reason: 'r',
        attempt: 1,
        detail: 'detail',
      });
    }
    recordSweepMetrics(t.meter, {
      scanned: 3,
      deleted: 1,
      skipped: 2,
      skippedLeased: 1,
      skippedHeld: 1,
      heldExtended: 1,
      skippedChanged: 1,
      alreadyDeleted: 0,
      requests: 4,
    } as unknown as SweepReport);
    const provider = await FakePaymentProvider.start();
    try {
      const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: provider.url });
      await providerFromSettings(settings, t.telemetry).charge({ paymentId: 'p-1', customerId: 'c', amount: 100, currency: 'EUR' }, 'payments/p-1');
    } finally {
      await provider.stop();
    }
    await driveHttpEndpoints(t.telemetry);
    // A payment that ended failed (handoff): the record write of the run counts payments.failed and logs it.
    const store = new InMemoryIdempotencyStore();
    const claimed = await store.claim({ consumer: 'payments', key: 'p-2' }, 'd'.repeat(64));
    if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
    await completeRecordActivity(
      () => store,
      () => t.telemetry,
    )(
      {
        claim: claimed.claim,
        result: { status: 'failed', reason: 'provider 503' },
        payment: { paymentId: 'p-2', customerId: 'c', amount: 1, currency: 'EUR' },
      },
      undefined as never,
    );
    // A held payment, a look-up the provider does not offer, a delivery waiting out a store outage (issue 34).
    const activityInput = { idempotencyKey: 'p-3', payment: { paymentId: 'p-3', customerId: 'c', amount: 1, currency: 'EUR' } };
    heldReporter(() => t.telemetry).held(activityInput, 'nothing can decide');
    heldReporter(() => t.telemetry).lookupUnsupported(activityInput, 404);
    outageReport(t.telemetry, { consumer: 'payments', messageId: 'm-1' }).waiting(1, 1_000, new StoreUnavailableError('down', 'claim'));
    // A shard whose table holds a payment of another shard (N changed without the migration): refused, counted, logged.
    const stray = { paymentId: 'p-9', owner: 1, status: 'COMPLETED' };
    const layoutGate = shardLayoutGate({
      layout: { count: 2, index: 0 },
      clock: { nowMs: () => 0 },
      check: async () => ({ checked: 1, requests: 16, strays: [stray] }),
    });
    await layoutGate(t.telemetry).catch(() => undefined);
    // A payment in progress whose run was terminated: the reconciler restarts it, counts payments.reconciled and logs it.
    const stuck = await store.get({ consumer: 'payments', key: 'p-2' });
    await reconcilePayments({
      records: async function* () {
        if (stuck) yield { ...stuck, key: 'p-3', status: 'IN_PROGRESS' as const };
      },
      runState: async () => 'terminated',
      restart: async () => ({ attempt: 2 }),
      telemetry: t.telemetry,
      clock: { nowMs: () => 0 },
      budgetMs: 60_000,
    });
    // Issue 43: a run going on for hours (run_stuck), a pass stopped by its budget (reconciler.incomplete), a record
    // write the store refuses (record_write_refused).
    if (stuck) {
      let now = 10 * 3_600_000;
      await reconcilePayments({
        records: async function* () {
          yield { ...stuck, key: 'p-4', status: 'IN_PROGRESS' as const, updatedAtMs: 0 };
          yield { ...stuck, key: 'p-5', status: 'IN_PROGRESS' as const, updatedAtMs: 0 };
        },
        runState: async () => ((now += 60_000), 'suspended'),
        restart: async () => ({ attempt: 2 }),
        telemetry: t.telemetry,
        clock: { nowMs: () => now },
        budgetMs: 30_000,
      });
    }
    const refusing = { complete: () => Promise.reject(new StoreRequestError('forbidden', 'complete', 403)) } as unknown as InMemoryIdempotencyStore;
    await writeRecordOnce(refusing, () => t.telemetry, {
      claim: claimed.claim,
      result: { status: 'failed', reason: 'x' },
      payment: { paymentId: 'p-2', customerId: 'c', amount: 1, currency: 'EUR' },
    }).catch(() => undefined);
    // A late success: a call's succeeded answer meeting p-2's record settled failed (payments.charged_after_settle).
    await writeRecordOnce(store, () => t.telemetry, {
      claim: claimed.claim,
      result: { status: 'succeeded', chargeId: 'ch_late', amount: 1, currency: 'EUR' },
      payment: { paymentId: 'p-2', customerId: 'c', amount: 1, currency: 'EUR' },
    });
    // An answer from a layer before the provider's idempotency (a rotated secret: 401), through the app's provider wiring.
    const gate = createServer((_request, response) => response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid key"}'));
    await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(gate.address() as AddressInfo).port}`;
      const settings = loadSettings({ IDEMPOTENCY_TABLE_CONNECTION_STRING: 'UseDevelopmentStorage=true', PAYMENT_PROVIDER_URL: url });
      await providerFromSettings(settings, t.telemetry)
        .charge({ paymentId: 'p-7', customerId: 'c', amount: 1, currency: 'EUR' }, 'p-7')
        .catch(() => undefined);
    } finally {
      await new Promise<void>((resolve) => gate.close(() => resolve()));
    }
    // A ledger check discrepancy, as the timer's tick reports it (runLedgerCheck on Azurite, the fake provider's list).
    await driveLedgerDiscrepancy(t.telemetry);
    await driveRewards(t.telemetry);
    emitted = { metrics: await t.metricAttributeNames(), logAttributes: new Set(t.logs().flatMap((l) => Object.keys(l.attributes))) };
    await t.shutdown();
  });

  const files = readdirSync(QUERIES).filter((f) => f.endsWith('.kql'));

  test('the recording saw the provider latency histogram and the outcome logs', () => {
    expect(emitted.metrics.get('payments.provider.latency')).toEqual(new Set(['statusCode']));
    expect(emitted.logAttributes.has('idempotencyKey')).toBe(true);
    expect(files.length).toBeGreaterThanOrEqual(12);
  });

  test.each(files)('%s', (file) => {
    const kql = readFileSync(join(QUERIES, file), 'utf8').replace(/^\s*\/\/.*$/gm, '');
    const dimensions = [...new Set([...kql.matchAll(/customDimensions\.(\w+)|customDimensions\[['"]([^'"]+)['"]\]/g)].map((m) => m[1] ?? m[2]))];
    const metricNames = [...kql.matchAll(/name\s*(?:==|in)\s*\(?\s*((?:'[^']+'\s*,?\s*)+)\)?/g)].flatMap((m) =>
      [...m[1].matchAll(/'([^']+)'/g)].map((n) => n[1]),
    );
    const problems: string[] = [];
    if (/\bcustomMetrics\b/.test(kql)) {
      expect(metricNames.length).toBeGreaterThan(0);
      for (const name of metricNames) {
        const attributes = emitted.metrics.get(name);
        if (!attributes) {
          problems.push(`metric ${name} is never emitted`);
          continue;
        }
        // A dimension must be emitted by every metric the query reads (else it is empty for some rows);
        // a query that also reads traces may take it from the log lines.
        const alsoTraces = /\btraces\b/.test(kql);
        for (const d of dimensions) if (!attributes.has(d) && !(alsoTraces && emitted.logAttributes.has(d))) problems.push(`${name} has no attribute ${d}`);
      }
    } else if (/\btraces\b/.test(kql)) {
      for (const d of dimensions) if (!emitted.logAttributes.has(d)) problems.push(`log lines have no attribute ${d}`);
    } else if (/\brequests\b/.test(kql)) {
      // The Functions host's invocations: the query may name only functions the app registers (src/functions).
      if (metricNames.length === 0) problems.push('reads requests without naming a function');
      for (const name of metricNames) if (!registeredFunctions().has(name)) problems.push(`function ${name} is not registered in src/functions`);
      if (dimensions.length > 0) problems.push('reads customDimensions of requests (the host sets none of ours)');
    } else {
      problems.push('reads neither customMetrics, traces nor requests');
    }
    expect([...new Set(problems)]).toEqual([]);
  });
});

/** The function names the app registers (`app.timer('expiryTimer', ...)` and the like, in src/functions). */
function registeredFunctions(): Set<string> {
  const dir = join(__dirname, '..', '..', 'src', 'functions');
  const names = readdirSync(dir).flatMap((f) => [...readFileSync(join(dir, f), 'utf8').matchAll(/\bapp\.\w+\(\s*'(\w+)'/g)].map((m) => m[1]));
  return new Set(names);
}

/** The rewards consumer (Event Hubs) on Azurite: a batch applied, replayed, resent by the producer, and one event parked. */
async function driveRewards(telemetry: ReturnType<typeof inMemoryTelemetry>['telemetry']): Promise<void> {
  const consumer = new RewardsConsumer({
    ledger: new RewardsLedger(await freshTable(azuriteOf(), 'mq')),
    parking: new ParkingStore(await freshTable(azuriteOf(), 'mqp')),
    telemetry,
  });
  const event = {
    specversion: '1.0',
    type: 'PaymentSucceeded',
    source: '/payments',
    id: 'p-1',
    data: { paymentId: 'p-1', customerId: 'c', amount: 500, currency: 'EUR' },
  };
  const context = (sequence: number) => ({ triggerMetadata: { partitionContext: { partitionId: '2' }, sequenceNumberArray: [sequence, sequence + 1] } });
  expect(await consumer.handleBatch([event, { not: 'a cloud event' }], context(10))).toMatchObject({ applied: 1, parked: 1 });
  expect(await consumer.handleBatch([event, { not: 'a cloud event' }], context(10))).toMatchObject({ replays: 1, parked: 1 });
  expect(await consumer.handleBatch([event], context(20))).toMatchObject({ duplicates: 1, replays: 0 });
  // A partition that stops moving: its batch throws (here the store is down), counted by consumer and partition.
  const down = await freshTable(azuriteOf(), 'mqd');
  down.pipeline.addPolicy(
    { name: 'down', sendRequest: (request) => Promise.reject(new RestError('connect ECONNREFUSED', { code: 'ECONNREFUSED', request })) },
    { afterPhase: 'Retry' },
  );
  const failing = new RewardsConsumer({ ledger: new RewardsLedger(down), parking: new ParkingStore(await freshTable(azuriteOf(), 'mqp')), telemetry });
  await expect(failing.handleBatch([event], context(30))).rejects.toThrow(/unavailable/);
  // A table the consumer cannot use (deleted): the partition stops, named by table and status.
  const gone = await freshTable(azuriteOf(), 'mqg');
  await gone.deleteTable();
  const stopped = new RewardsConsumer({ ledger: new RewardsLedger(gone), parking: new ParkingStore(await freshTable(azuriteOf(), 'mqp')), telemetry });
  await expect(stopped.handleBatch([event], context(40))).rejects.toThrow(/TableNotFound/);
}

/** Every HTTP outcome the queries read: accepted, replayed, 409, 422 (payments API); processed, replayed, refused signatures (webhook). */
async function driveHttpEndpoints(telemetry: ReturnType<typeof inMemoryTelemetry>['telemetry']): Promise<void> {
  const store = new InMemoryIdempotencyStore({ leaseMs: 60_000, retentionMs: 86_400_000 });
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const api = paymentsApi({ store, queue: { send: () => gate }, callerIdentity: 'functionKey', telemetry });
  const request = (body: unknown, headers: Record<string, string>) => ({
    method: 'POST',
    url: 'https://app/api/payments',
    body: Buffer.from(JSON.stringify(body)),
    headers: { get: (name: string) => headers[name] ?? null },
  });
  const payment = { paymentId: 'p-1', customerId: 'c', amount: 100, currency: 'EUR' };
  const headers = { 'x-functions-key': 'k', 'idempotency-key': 'i-1' };
  const first = api(request(payment, headers));
  expect((await api(request(payment, headers))).status).toBe(409);
  release();
  expect((await first).status).toBe(202);
  expect((await api(request(payment, headers))).headers['idempotent-replayed']).toBe('true');
  expect((await api(request({ ...payment, amount: 1 }, headers))).status).toBe(422);

  const secret = 'whsec_monitoring_0123456789';
  const payments = { apply: () => Promise.resolve({ kind: 'stale', rowVersion: 1 }) } as unknown as PaymentStateTable;
  const webhook = paymentWebhook({ store, payments, secrets: [secret], toleranceSec: 300, telemetry });
  const event = Buffer.from(
    JSON.stringify({ id: 'evt_1', type: 'charge.succeeded', created: 1, data: { paymentId: 'p-1', chargeId: 'ch', amount: 100, currency: 'EUR', version: 1 } }),
  );
  const now = Math.floor(Date.now() / 1000);
  const signed = (t: number, s = secret) => ({
    method: 'POST',
    url: 'https://app/api/webhooks/payment-provider',
    body: event,
    headers: { get: (n: string) => (n === 'provider-signature' ? signatureHeader(s, t, event) : null) },
  });
  expect((await webhook(signed(now))).status).toBe(200);
  expect((await webhook(signed(now))).headers['idempotent-replayed']).toBe('true');
  expect((await webhook(signed(now - 3600))).status).toBe(400);
  expect((await webhook(signed(now, 'another-secret-0123456789'))).status).toBe(403);
}

/**
 * The ledger check's tick as the timer runs it (`runLedgerCheck`, its checkpoint and discrepancy rows on Azurite) over
 * the fake provider's list: one charge made under a key with no payments record is a discrepancy (`no-record`).
 */
async function driveLedgerDiscrepancy(telemetry: Telemetry): Promise<void> {
  let nowMs = Date.UTC(2026, 11, 1);
  const provider = await FakePaymentProvider.start({ clock: () => nowMs });
  try {
    const client = new PaymentProviderClient({ baseUrl: provider.url, timeoutMs: 5_000 });
    await client.charge({ paymentId: 'p-8', customerId: 'c', amount: 1, currency: 'EUR' }, 'p-8');
    nowMs += 60_000;
    await runLedgerCheck({
      provider: client,
      table: await freshTable(azuriteOf(), 'mql'),
      record: async () => undefined,
      telemetry,
      clock: { nowMs: () => nowMs },
      delayMs: 0,
      retentionMs: 30 * 86_400_000,
      graceMs: 8 * 86_400_000,
      maxPages: 10,
      budgetMs: 60_000,
      timeoutMs: 5_000,
      initialFromMs: nowMs - 3_600_000,
    });
  } finally {
    await provider.stop();
  }
}
