import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TableClient } from '@azure/data-tables';
import { keyFromMessageId, payloadDigest, TableIdempotencyStore } from 'azure-functions-idempotency/internal';
import { ExitCode } from 'azure-functions-idempotency/operator';
import { completeRecord } from '../../src/payments/completeRecord';
import { paymentRow } from '../../src/payments/paymentRow';
import type { ChargeResult } from '../../src/payments/schema';
import { shardOf } from '../../src/payments/shards';
import { runAppKeys } from '../../tools/operator/keys';
import { runPaymentsRetry } from '../../tools/operator/paymentsRetry';
import { AzuriteTable } from '../support/azurite';

/**
 * Issue 52 item 2, the operator's tools on two shards (each its own Azurite: its own account): with shard 0's settings
 * and the map `PAYMENT_SHARD_TABLE_ENDPOINTS`, `npm run payments:retry` and `npm run keys` reach the owner's table of a
 * payment of shard 1; without the map they refuse, naming the owner.
 */
const FAILED: ChargeResult = { status: 'failed', reason: 'provider failed transiently: retry budget spent (last: HTTP 503)' };
let azurites: AzuriteTable[];
let durable: { url: string; requests: string[]; stop(): Promise<void> };

beforeAll(async () => {
  azurites = await Promise.all([AzuriteTable.start(), AzuriteTable.start()]);
  for (const azurite of azurites) await records(azurite).ensureTable();
  durable = await durableApiStub();
});
afterAll(async () => {
  await durable?.stop();
  for (const azurite of azurites ?? []) await azurite.stop();
});

function records(azurite: AzuriteTable) {
  return new TableIdempotencyStore(TableClient.fromConnectionString(azurite.connectionString, 'idempotency', { allowInsecureConnection: true }), {
    retentionMs: 86_400_000,
  });
}
/** Shard 0's settings, as an operator has them (its local.settings.json), with or without the map. */
const shard0 = (map: boolean): Record<string, string> => ({
  IDEMPOTENCY_TABLE_CONNECTION_STRING: azurites[0].connectionString,
  IDEMPOTENCY_CACHE_SIZE: '0',
  PAYMENT_SHARD_COUNT: '2',
  PAYMENT_SHARD_INDEX: '0',
  PAYMENTS_QUEUE_NAME: 'payments-0',
  ...(map ? { PAYMENT_SHARD_TABLE_ENDPOINTS: azurites.map((a) => `http://127.0.0.1:${a.port}/devstoreaccount1`).join(',') } : {}),
});
const ownedBy = (shard: number, prefix: string): string => {
  for (let i = 0; ; i++) if (shardOf(`${prefix}${i}`, 2) === shard) return `${prefix}${i}`;
};

/** A payment of shard 1 that ended failed, in shard 1's table (as its consumer leaves it). */
async function failedOnShard1(prefix: string) {
  const paymentId = ownedBy(1, prefix);
  const payment = { paymentId, customerId: 'c-1', amount: 1250, currency: 'EUR' };
  const store = records(azurites[1]);
  const outcome = await store.claim(keyFromMessageId('payments', paymentId), payloadDigest(payment), { effects: [paymentRow(payment, 'pending')] });
  if (outcome.kind !== 'claimed') throw new Error(`seed: ${outcome.kind}`);
  expect(await completeRecord(store, { claim: outcome.claim, result: FAILED, payment })).toBe('completed');
  return paymentId;
}

describe('npm run payments:retry with shard 0 settings, for a payment of shard 1', () => {
  test("with the map and shard 1's Durable endpoint: reopens the record in shard 1's table and starts the run there", async () => {
    const paymentId = await failedOnShard1('pay-retry-');
    const lines: string[] = [];
    expect(await runPaymentsRetry(['--payment-id', paymentId, '--durable-url', durable.url], shard0(true), (l) => lines.push(l))).toBe(0);
    expect(lines[0]).toMatch(
      new RegExp(`^payment ${paymentId}: shard 1 of 2, its records at http://127\\.0\\.0\\.1:${azurites[1].port}/devstoreaccount1, its run at `),
    );
    expect(lines[1]).toMatch(/retry started .* attempt 2/);
    // The run's status read first (none: the command may start it), then the start, both in shard 1's hub.
    expect(durable.requests).toEqual([
      expect.stringContaining('/durabletask/instances/'),
      expect.stringContaining('/durabletask/orchestrators/chargePayment/'),
    ]);
    expect(await records(azurites[1]).get(keyFromMessageId('payments', paymentId))).toMatchObject({ status: 'IN_PROGRESS', attempt: 2 });
    expect(await records(azurites[0]).get(keyFromMessageId('payments', paymentId))).toBeUndefined();
  });

  test('with the map but no --durable-url: refused (the run must start in the owner hub), nothing changed', async () => {
    const paymentId = await failedOnShard1('pay-nodurable-');
    const lines: string[] = [];
    expect(await runPaymentsRetry(['--payment-id', paymentId], shard0(true), (l) => lines.push(l))).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/belongs to shard 1 of 2 .* pass --durable-url \(and --durable-key\) of shard 1's app/)]);
    expect(await records(azurites[1]).get(keyFromMessageId('payments', paymentId))).toMatchObject({ status: 'COMPLETED', attempt: 1 });
  });

  test('without the map: refused naming the owner, as before', async () => {
    const paymentId = await failedOnShard1('pay-nomap-');
    const lines: string[] = [];
    expect(await runPaymentsRetry(['--payment-id', paymentId, '--durable-url', durable.url], shard0(false), (l) => lines.push(l))).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^refused: payment \S+ belongs to shard 1 of 2; these settings are shard 0's/)]);
  });
});

describe('npm run keys with shard 0 settings', () => {
  async function keys(argv: readonly string[], env: Record<string, string>, runStatusOf?: (id: string) => Promise<string | undefined>) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runAppKeys(argv, { env, out: (l) => out.push(l), err: (l) => err.push(l) }, runStatusOf);
    return { code, out, err };
  }
  const noRun = async () => undefined;

  test("keys show payments <id of shard 1> reads shard 1's table; --shard 0 reads shard 0's (not there)", async () => {
    const paymentId = await failedOnShard1('pay-show-');
    const shown = await keys(['keys', 'show', 'payments', paymentId], shard0(true), noRun);
    expect(shown.code).toBe(ExitCode.Ok);
    expect(shown.err[0]).toBe(`shard 1 of 2: the owner of payment ${paymentId}, its table at http://127.0.0.1:${azurites[1].port}/devstoreaccount1`);
    expect(shown.out.join('\n')).toMatch(/failed/);
    expect((await keys(['keys', 'show', 'payments', paymentId, '--shard', '0'], shard0(true), noRun)).code).toBe(ExitCode.NotFound);
  });

  test("another shard's charge runs need its --durable-url (or --skip-run-check); without the map: refused, naming the setting", async () => {
    const paymentId = await failedOnShard1('pay-guard-');
    const unguarded = await keys(['keys', 'show', 'payments', paymentId], shard0(true));
    expect(unguarded.code).toBe(ExitCode.Usage);
    expect(unguarded.err.at(-1)).toMatch(/pass --durable-url \(and --durable-key\) of shard 1's app, or --skip-run-check/);
    expect((await keys(['keys', 'show', 'payments', paymentId, '--skip-run-check'], shard0(true))).code).toBe(ExitCode.Ok);
    const noMap = await keys(['keys', 'show', 'payments', paymentId], shard0(false), noRun);
    expect(noMap.code).toBe(ExitCode.Usage);
    expect(noMap.err).toEqual([expect.stringMatching(/shard 1 of 2: the owner of payment .*no PAYMENT_SHARD_TABLE_ENDPOINTS/)]);
  });
});

/** Durable's HTTP API as far as the retry uses it: `POST orchestrators/{name}/{instanceId}` answered 202, recorded. */
async function durableApiStub() {
  const requests: string[] = [];
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      requests.push(request.url ?? '');
      // A status read: no such run (404); a start: accepted (202).
      response.writeHead(request.method === 'GET' ? 404 : 202, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/durabletask/`, requests, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
