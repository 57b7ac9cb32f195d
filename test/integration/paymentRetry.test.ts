/**
 * The operator's retry of a failed payment (`retryFailedPayment`, `npm run payments:retry`) on both stores the
 * payments consumer runs on (`IDEMPOTENCY_STORE`): the Table store on Azurite and the Cosmos store on the emulator.
 * The same cases on each: a failed payment is reopened, claimed with attempt + 1 and its run started with the same
 * instance id (the old claim fenced); a succeeded one is refused; a change between the read and the reopen is
 * refused (If-Match, 412); a second run after a crash between the reopen and the claim takes the record over; the
 * command picks the store from its settings. The full handoff on the Table store (a real failure from the provider,
 * the Durable run of the retry): test/integration/paymentsHandOff.test.ts.
 */
import { TableClient } from '@azure/data-tables';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { PaymentRetryRefusedError, retryFailedPayment, type PaymentRetryDeps } from '../../src/app/paymentRetry';
import type { WiringOverrides } from '../../src/app/stores';
import { CosmosIdempotencyStore } from 'azure-functions-idempotency/internal';
import { payloadDigest } from 'azure-functions-idempotency/internal';
import { LeaseLostError } from 'azure-functions-idempotency/internal';
import type { Claim, ReopenableStore } from 'azure-functions-idempotency/internal';
import { keyFromMessageId } from 'azure-functions-idempotency/internal';
import type { IdempotencyRecord } from 'azure-functions-idempotency/internal';
import { TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { chargeEntityKey, chargeInstanceId } from '../../src/payments/ChargeWorkflow';
import type { ChargeOrchestrationInput } from '../../src/payments/chargeOrchestration';
import { completeRecord } from '../../src/payments/completeRecord';
import { PAYMENT_ROW, paymentRow } from '../../src/payments/paymentRow';
import type { ChargeResult, PaymentRequested } from '../../src/payments/schema';
import { runPaymentsRetry } from '../../tools/operator/paymentsRetry';
import { useAzurite } from '../support/azurite';
import { CosmosEmulator } from '../support/cosmos';

const azuriteOf = useAzurite();
let cosmos: CosmosEmulator;
beforeAll(async () => {
  cosmos = await CosmosEmulator.start();
});
afterAll(async () => {
  await cosmos?.stop();
});

const RETENTION_MS = 86_400_000;
const LEASE_MS = 60_000;
const FAILED: ChargeResult = { status: 'failed', reason: 'provider failed transiently: retry budget of 60 s spent (last: HTTP 503)' };
const SUCCEEDED: ChargeResult = { status: 'succeeded', chargeId: 'ch_1', amount: 1250, currency: 'EUR' };

/** One store of each kind, fresh table or container per test; `settings` is what the command reads to find it. */
interface StoreUnderTest {
  /** A store client on the test's records (several may be made: another operator's process). */
  readonly open: () => ReopenableStore;
  /** A store client with a completed-key cache on the same records. */
  readonly cached: () => ReopenableStore;
  /** The settings that point `npm run payments:retry` at the same records. */
  readonly settings: Record<string, string>;
  /**
   * The command's wiring: the Cosmos container of this test's client. The app's client (`cosmosIdempotencyContainer`)
   * follows the account's endpoint discovery, and this in-process emulator names an https endpoint it does not
   * serve; the test's client has discovery off (test/support/cosmos.ts). `IDEMPOTENCY_STORE` still picks the store.
   */
  readonly wiring: WiringOverrides;
}

const stores: ReadonlyArray<[string, () => Promise<StoreUnderTest>]> = [
  [
    'Table store (Azurite)',
    async () => {
      const tableName = `retry${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const client = () => TableClient.fromConnectionString(azuriteOf().connectionString, tableName, { allowInsecureConnection: true });
      await new TableIdempotencyStore(client(), { retentionMs: RETENTION_MS }).ensureTable();
      return {
        open: () => new TableIdempotencyStore(client(), { retentionMs: RETENTION_MS, leaseMs: LEASE_MS }),
        cached: () => new TableIdempotencyStore(client(), { retentionMs: RETENTION_MS, leaseMs: LEASE_MS, cacheSize: 10 }),
        settings: { IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString, IDEMPOTENCY_TABLE_NAME: tableName },
        wiring: {},
      };
    },
  ],
  [
    'Cosmos store (emulator)',
    async () => {
      const container = await cosmos.freshIdempotencyContainer();
      return {
        open: () => new CosmosIdempotencyStore(container, { retentionMs: RETENTION_MS, leaseMs: LEASE_MS }),
        cached: () => new CosmosIdempotencyStore(container, { retentionMs: RETENTION_MS, leaseMs: LEASE_MS, cacheSize: 10 }),
        settings: {
          // The table settings are still read (the app's other tables); the payments records are in Cosmos.
          IDEMPOTENCY_TABLE_CONNECTION_STRING: azuriteOf().connectionString,
          IDEMPOTENCY_STORE: 'cosmos',
          COSMOS_ENDPOINT: cosmos.endpoint,
          // The emulator accepts any key: a placeholder, never a real credential.
          COSMOS_KEY: Buffer.from('emulator').toString('base64'),
          COSMOS_DATABASE_NAME: container.database.id,
          COSMOS_IDEMPOTENCY_CONTAINER: container.id,
        },
        wiring: { idempotencyContainer: container },
      };
    },
  ],
];

const paymentOf = (paymentId: string): PaymentRequested => ({ paymentId, customerId: 'cust-1', amount: 1250, currency: 'EUR' });

/** A payment whose run ended with `result`, as the handoff leaves it: claimed with its Payment row `pending`, completed by the run. */
async function finishedPayment(store: ReopenableStore, paymentId: string, result: ChargeResult) {
  const payment = paymentOf(paymentId);
  const key = keyFromMessageId('payments', paymentId);
  const outcome = await store.claim(key, payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  if (outcome.kind !== 'claimed') throw new Error(`seed: ${outcome.kind}`);
  expect(await completeRecord(store, { claim: outcome.claim, result, payment })).toBe('completed');
  const record = (await store.get(key))!;
  expect(record).toMatchObject({ status: 'COMPLETED', attempt: 1, result });
  return { key, payment, claim: outcome.claim, record, instanceId: chargeInstanceId(chargeEntityKey(record.recordId, record.createdAtMs, record.digest)) };
}

/** The orchestration starter of the retry, recording what it was asked to start (Durable's HTTP API in the command). */
function recordedStarts() {
  const starts: Array<{ instanceId: string; input: ChargeOrchestrationInput }> = [];
  const start = async (instanceId: string, input: ChargeOrchestrationInput) => {
    starts.push({ instanceId, input });
    return 'started' as const;
  };
  return { starts, start };
}

const retryBudget = { budgetMs: 60_000, firstDelayMs: 5_000, maxDelayMs: 300_000 };
const depsOf = (store: ReopenableStore, start: PaymentRetryDeps['start']): PaymentRetryDeps => ({ store, start, retry: retryBudget });

describe.each(stores)("the operator's payment retry on the %s", (_name, setUp) => {
  let under: StoreUnderTest;
  beforeEach(async () => {
    under = await setUp();
  });

  test("a payment held for an operator: the run carries the key's age from the record's creation, or 0 once the operator checked at the provider (--checked-at-provider)", async () => {
    const store = under.open();
    const held: ChargeResult = { status: 'failed', reason: 'held for an operator: cannot be checked', code: 'held-for-operator' };
    const failed = await finishedPayment(store, 'pay-h1', held);
    const { starts, start } = recordedStarts();
    const nowMs = () => failed.record.createdAtMs + 25 * 3_600_000;
    await retryFailedPayment({ ...depsOf(store, start), nowMs }, 'pay-h1');
    expect(starts[0].input.keyAgeAtStartMs).toBe(25 * 3_600_000);
    await store.complete(starts[0].input.handoff!.claim, held);
    await retryFailedPayment({ ...depsOf(store, start), nowMs, checkedAtProvider: true }, 'pay-h1');
    expect(starts[1].input).toMatchObject({ attempt: 3, keyAgeAtStartMs: 0 });
  });

  test('a failed payment: reopened, claimed with attempt + 1 (Payment row pending again), its run started with the same instance id; the old claim is fenced', async () => {
    const store = under.open();
    const failed = await finishedPayment(store, 'pay-r1', FAILED);
    const { starts, start } = recordedStarts();
    const report = await retryFailedPayment(depsOf(store, start), 'pay-r1');
    expect(report).toEqual({ paymentId: 'pay-r1', instanceId: failed.instanceId, attempt: 2, previous: `failed: ${FAILED.reason}`, started: 'started' });
    expect(starts).toHaveLength(1);
    const [{ instanceId, input }] = starts;
    expect(instanceId).toBe(failed.instanceId);
    expect(input).toMatchObject({
      idempotencyKey: 'pay-r1',
      attempt: 2,
      digest: failed.record.digest,
      payment: failed.payment,
      provider: { lookup: 'none', keyMemoryHours: 24 },
    });
    // The key's age (from the record's creation) goes with the run: past the provider's key memory it must look up or hold.
    expect(input.keyAgeAtStartMs).toBeGreaterThanOrEqual(0);
    expect(input.entityKey).toBe(chargeEntityKey(failed.record.recordId, failed.record.createdAtMs, failed.record.digest));
    const claim = input.handoff!.claim;
    expect(claim).toMatchObject({ attempt: 2, createdAtMs: failed.record.createdAtMs, recordId: failed.record.recordId });
    expect(await store.get(failed.key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2, ownerId: claim.ownerId, etag: claim.etag });
    expect(await store.readLocalRow(failed.key, PAYMENT_ROW)).toMatchObject({ paymentId: 'pay-r1', amount: 1250, state: 'pending' });
    // The fence: the failed run's claim can no longer write; the new run's completes the record.
    await expect(store.complete(failed.claim, FAILED)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await completeRecord(store, { claim, result: SUCCEEDED, payment: failed.payment })).toBe('completed');
    expect(await store.get(failed.key)).toMatchObject({ status: 'COMPLETED', attempt: 2, result: SUCCEEDED });
    expect(await store.readLocalRow(failed.key, PAYMENT_ROW)).toMatchObject({ state: 'succeeded', chargeId: 'ch_1' });
  });

  test('reopen alone: COMPLETED -> RELEASED with lease 0 and the reason, result, rows and generation kept; again from the same read: done; from a record changed since: changed (412)', async () => {
    const store = under.open();
    const failed = await finishedPayment(store, 'pay-r2', FAILED);
    const reopened = await store.reopen(failed.record, 'operator retry; it had failed');
    expect(reopened.kind).toBe('reopened');
    const now = await store.get(failed.key);
    expect(now).toMatchObject({ status: 'RELEASED', attempt: 1, leaseExpiresAtMs: 0, lastError: 'operator retry; it had failed', result: FAILED });
    expect(now).toMatchObject({ createdAtMs: failed.record.createdAtMs, localRows: [PAYMENT_ROW], ownerId: failed.record.ownerId });
    expect(now!.etag).not.toBe(failed.record.etag);
    expect(reopened).toEqual({ kind: 'reopened', record: now });
    expect(await store.readLocalRow(failed.key, PAYMENT_ROW)).toMatchObject({ state: 'failed', reason: FAILED.reason });
    // The same reopen from the record as read before (its answer lost, or a second operator): found done, nothing written.
    expect(await store.reopen(failed.record, 'a second operator')).toEqual({ kind: 'reopened', record: now });
    expect(await store.get(failed.key)).toEqual(now);
    // Only a completed record is reopened.
    await expect(store.reopen(now!, 'again')).rejects.toThrow(/only a completed record is reopened; this one is RELEASED/);
    // Once the reopened record is claimed, the record read before is stale: its ETag no longer matches (412), nothing is written.
    const taken = await store.claim(failed.key, failed.record.digest);
    expect(taken).toMatchObject({ kind: 'reclaimed', previousStatus: 'RELEASED', claim: { attempt: 2 } });
    const held = await store.get(failed.key);
    expect(await store.reopen(failed.record, 'a late operator')).toEqual({ kind: 'changed' });
    expect(await store.get(failed.key)).toEqual(held);
    // A completed record rewritten since it was read (here: the retry's run completed it again) is changed too.
    expect(await completeRecord(store, { claim: (taken as { claim: Claim }).claim, result: FAILED, payment: failed.payment })).toBe('completed');
    const completedAgain = await store.get(failed.key);
    expect(completedAgain).toMatchObject({ status: 'COMPLETED', attempt: 2 });
    expect(await store.reopen(failed.record, 'a late operator')).toEqual({ kind: 'changed' });
    expect(await store.get(failed.key)).toEqual(completedAgain);
  });

  test("reopen drops the store's cached copy of the record: the next claim on the same store takes it over, never the cached failure", async () => {
    const cached = under.cached();
    const failed = await finishedPayment(cached, 'pay-r7', FAILED);
    // The completion cached the record (every completed record is, without a `cacheable` option): a claim answers from it.
    expect(await cached.claim(failed.key, failed.record.digest)).toMatchObject({ kind: 'duplicate', cached: true });
    expect((await cached.reopen(failed.record, 'operator retry')).kind).toBe('reopened');
    expect(await cached.claim(failed.key, failed.record.digest)).toMatchObject({ kind: 'reclaimed', previousStatus: 'RELEASED', claim: { attempt: 2 } });
  });

  test('a succeeded payment is refused and left as it is; no run is started', async () => {
    const store = under.open();
    const done = await finishedPayment(store, 'pay-r3', SUCCEEDED);
    const { starts, start } = recordedStarts();
    const refusal = retryFailedPayment(depsOf(store, start), 'pay-r3');
    await expect(refusal).rejects.toBeInstanceOf(PaymentRetryRefusedError);
    await expect(refusal).rejects.toThrow('payment pay-r3 did not fail (succeeded): only a failed payment is retried');
    expect(starts).toEqual([]);
    expect(await store.get(done.key)).toEqual(done.record);
    await expect(retryFailedPayment(depsOf(store, start), 'pay-none')).rejects.toThrow(/payment pay-none has no record/);
  });

  test('a change between the read and the reopen (another operator retried it meanwhile) is refused (412): no second reopen, claim or run', async () => {
    const store = under.open();
    const failed = await finishedPayment(store, 'pay-r4', FAILED);
    const other = recordedStarts();
    const ours = recordedStarts();
    // Another operator's whole retry lands right after our read of the record.
    const read = store.get.bind(store);
    store.get = async (key) => {
      const record = await read(key);
      await retryFailedPayment(depsOf(under.open(), other.start), 'pay-r4');
      return record;
    };
    await expect(retryFailedPayment(depsOf(store, ours.start), 'pay-r4')).rejects.toThrow('payment pay-r4 changed meanwhile; run the command again');
    expect(ours.starts).toEqual([]);
    expect(other.starts).toHaveLength(1);
    const otherClaim = other.starts[0].input.handoff!.claim;
    expect(await read(failed.key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2, ownerId: otherClaim.ownerId, etag: otherClaim.etag });
  });

  test('a crash between the reopen and the claim: the record is left RELEASED; running the command again takes it over (attempt 2, the same instance id)', async () => {
    const store = under.open();
    const failed = await finishedPayment(store, 'pay-r5', FAILED);
    const claim = store.claim.bind(store);
    store.claim = async () => {
      throw new Error('injected crash after the reopen, before the claim');
    };
    const first = recordedStarts();
    await expect(retryFailedPayment(depsOf(store, first.start), 'pay-r5')).rejects.toThrow('injected crash');
    expect(first.starts).toEqual([]);
    const left: IdempotencyRecord | undefined = await store.get(failed.key);
    expect(left).toMatchObject({ status: 'RELEASED', attempt: 1, leaseExpiresAtMs: 0 });

    store.claim = claim;
    const again = recordedStarts();
    const report = await retryFailedPayment(depsOf(store, again.start), 'pay-r5');
    expect(report).toMatchObject({ instanceId: failed.instanceId, attempt: 2, previous: `failed: ${FAILED.reason}`, started: 'started' });
    expect(again.starts.map((s) => [s.instanceId, s.input.attempt])).toEqual([[failed.instanceId, 2]]);
    expect(await store.get(failed.key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2, createdAtMs: failed.record.createdAtMs });
  });

  test('the command (npm run payments:retry) finds the records through its settings and starts the run over the Durable HTTP API', async () => {
    const store = under.open();
    const failed = await finishedPayment(store, 'pay-r6', FAILED);
    const durable = await durableApiStub();
    try {
      const lines: string[] = [];
      const env = { ...under.settings, IDEMPOTENCY_CACHE_SIZE: '0' };
      expect(await runPaymentsRetry(['--payment-id', 'pay-r6', '--durable-url', durable.url], env, (line) => lines.push(line), under.wiring)).toBe(0);
      expect(lines).toEqual([`payment pay-r6: retry started (instance ${failed.instanceId}, attempt 2); it had failed: ${FAILED.reason}`]);
      // The run's status first (none: the command may start it), then the start.
      expect(durable.requests.map((r) => r.method)).toEqual(['GET', 'POST']);
      expect(durable.requests[0]).toMatchObject({ path: `/durabletask/instances/${encodeURIComponent(failed.instanceId)}` });
      expect(durable.requests[1]).toMatchObject({ method: 'POST', path: `/durabletask/orchestrators/chargePayment/${encodeURIComponent(failed.instanceId)}` });
      expect(JSON.parse(durable.requests[1].body)).toMatchObject({ idempotencyKey: 'pay-r6', attempt: 2 });
      expect(await store.get(failed.key)).toMatchObject({ status: 'IN_PROGRESS', attempt: 2 });
      // Run again: the payment is in progress now, not failed: refused, nothing started.
      expect(await runPaymentsRetry(['--payment-id', 'pay-r6', '--durable-url', durable.url], env, (line) => lines.push(line), under.wiring)).toBe(1);
      expect(lines.at(-1)).toBe('refused: payment pay-r6 is in progress (its lease has not lapsed): not retried');
      expect(durable.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    } finally {
      await durable.stop();
    }
  });
});

/**
 * Durable's HTTP API as far as the command uses it: `GET instances/{instanceId}` answered 404 (no run of the lifetime:
 * the command may start one), `POST orchestrators/{name}/{instanceId}` answered 202; every request recorded.
 */
async function durableApiStub() {
  const requests: Array<{ method: string; path: string; body: string }> = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({ method: request.method ?? '', path: request.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      if (request.method === 'GET') response.writeHead(404, { 'content-type': 'application/json' }).end('{}');
      else response.writeHead(202, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/durabletask/`,
    requests,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
