import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keyFromMessageId, payloadDigest, RecordStatus } from 'azure-functions-idempotency';
import { ExitCode } from 'azure-functions-idempotency/operator';
import { finishedPaymentRow, paymentRow } from '../../src/payments/paymentRow';
import { PAYMENTS_CONSUMER } from '../../src/payments/PaymentsConsumer';
import type { PaymentRequested } from '../../src/payments/schema';
import { runAppKeys } from '../../tools/operator/keys';
import { chargeRunOf, durableHttpStatus } from '../../tools/operator/paymentsKeys';
import { useAzurite } from '../support/azurite';
import { claimOf, tableRig, type ConsoleRig } from '../support/keysConsole';

/**
 * The app's console (`npm run keys`, tools/operator/keys.ts): the package's CLI with the payments extension, on
 * Azurite. The charge run's status comes from a stand-in of the Durable HTTP API (no Functions host runs here): a map
 * for the commands, and a loopback HTTP server for `durableHttpStatus` itself.
 */
const azuriteOf = useAzurite();
let rig: ConsoleRig;
beforeAll(async () => {
  rig = await tableRig(azuriteOf());
});

const payment = (paymentId: string): PaymentRequested => ({ paymentId, customerId: 'SECRET-CUSTOMER', amount: 4242, currency: 'EUR' });

async function run(argv: readonly string[], runs: Map<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAppKeys([...rig.connection, ...argv], { env: {}, clock: rig.clock, out: (l) => out.push(l), err: (l) => err.push(l) }, async (id) =>
    runs.get(id),
  );
  return { code, out, err, text: [...out, ...err].join('\n') };
}

/** A payment claimed (Payment row pending) and completed with `result` (its row finished), as the consumer writes it. */
async function paymentWith(paymentId: string, result: Parameters<typeof finishedPaymentRow>[1]) {
  const key = keyFromMessageId(PAYMENTS_CONSUMER, paymentId);
  const claim = claimOf(await rig.store.claim(key, payloadDigest(payment(paymentId)), { effects: [paymentRow(payment(paymentId), 'pending')] }));
  return rig.store.complete(claim, result, [finishedPaymentRow(payment(paymentId), result)]);
}

describe('npm run keys: the payments extension', () => {
  test('show: the charge run and the Payment row (state, reason; never customer, amount, currency); failed and held read as such', async () => {
    const failed = await paymentWith('pay-x1', { status: 'failed', reason: 'provider 503 for 60 min' });
    await paymentWith('pay-x2', { status: 'failed', reason: 'no look-up', code: 'held-for-operator' });
    const runs = new Map([[chargeRunOf(failed), 'Failed']]);
    const show = await run(['keys', 'show', 'payments', 'pay-x1'], runs);
    expect(show.code).toBe(ExitCode.Ok);
    expect(show.text).toMatch(new RegExp(`charge run\\s+${chargeRunOf(failed)}: Failed`));
    expect(show.text).toMatch(/payment row\s+state failed, reason provider 503 for 60 min/);
    expect(show.text).toMatch(/status\s+COMPLETED \(failed\)/);
    const held = await run(['keys', 'list', 'payments', '--status', 'held', '--json'], runs);
    expect(JSON.parse(held.out.join('\n')).records.map((r: { key: string; held: boolean }) => [r.key, r.held])).toEqual([['pay-x2', true]]);
    expect(`${show.text}${held.text}`).not.toMatch(/SECRET|4242|EUR/);
  });

  test('release: refused while the charge run is Running; released once it has ended, the next delivery takes the payment over', async () => {
    const record = await paymentWith('pay-x3', { status: 'failed', reason: 'provider down' });
    const runs = new Map([[chargeRunOf(record), 'Running']]);
    const refused = await run(['keys', 'release', 'payments', 'pay-x3', '--reason', 'provider back'], runs);
    expect([refused.code, refused.err.join()]).toEqual([ExitCode.Refused, expect.stringContaining(`its charge run ${chargeRunOf(record)} is Running`)]);
    runs.set(chargeRunOf(record), 'Completed');
    const released = await run(['keys', 'release', 'payments', 'pay-x3', '--reason', 'provider back', '--by', 'carol'], runs);
    expect(released.code).toBe(ExitCode.Ok);
    const after = (await rig.store.get(keyFromMessageId(PAYMENTS_CONSUMER, 'pay-x3')))!;
    expect([after.status, after.lastError]).toEqual([RecordStatus.Released, expect.stringContaining('released by operator carol')]);
    const next = await rig.store.claim(keyFromMessageId(PAYMENTS_CONSUMER, 'pay-x3'), payloadDigest(payment('pay-x3')));
    expect([next.kind, claimOf(next).attempt]).toEqual(['reclaimed', 2]);
  });

  test('--skip-run-check: no Durable endpoint needed; the app options are taken out before the package parses the rest', async () => {
    await paymentWith('pay-x4', { status: 'succeeded', chargeId: 'ch_4' } as never);
    const throwing = new Map<string, string>();
    const show = await run(['--skip-run-check', 'keys', 'show', 'payments', 'pay-x4'], throwing);
    expect(show.text).toMatch(/charge run\s+payment-\w+: not checked \(--skip-run-check\)/);
    expect(show.text).toMatch(/payment row\s+state succeeded, chargeId ch_4/);
    const bad = await run(['keys', 'show', 'payments', 'pay-x4', '--durable-url'], throwing);
    expect(bad.code).toBe(2);
  });

  test('a Durable endpoint that does not answer: show still shows the record; a release is refused (it cannot tell whether the run goes on)', async () => {
    await paymentWith('pay-x5', { status: 'failed', reason: 'provider down' });
    const out: string[] = [];
    const err: string[] = [];
    const io = { env: {}, clock: rig.clock, out: (l: string) => out.push(l), err: (l: string) => err.push(l) };
    const down = ['--durable-url', 'http://127.0.0.1:1/durabletask/'];
    expect(await runAppKeys([...rig.connection, ...down, 'keys', 'show', 'payments', 'pay-x5'], io)).toBe(ExitCode.Ok);
    expect(out.join('\n')).toMatch(/work going\s+could not tell whether work on it goes on: the Durable endpoint http:\/\/127\.0\.0\.1:1 did not answer/);
    expect(await runAppKeys([...rig.connection, ...down, 'keys', 'release', 'payments', 'pay-x5', '--reason', 'x'], io)).toBe(ExitCode.Refused);
    expect((await rig.store.get(keyFromMessageId(PAYMENTS_CONSUMER, 'pay-x5')))!.status).toBe(RecordStatus.Completed);
  });

  test('durableHttpStatus: the instance status of the Durable HTTP API, 404 as none, the key sent as ?code=', async () => {
    const seen: string[] = [];
    const server = createServer((request, response) => {
      seen.push(request.url ?? '');
      if (request.url?.startsWith('/durabletask/instances/payment-known')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ name: 'chargePayment', runtimeStatus: 'Running' }));
      } else {
        response.writeHead(404);
        response.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const statusOf = durableHttpStatus(`http://127.0.0.1:${(server.address() as AddressInfo).port}/durabletask/`, 'k3y');
      expect(await statusOf('payment-known')).toBe('Running');
      expect(await statusOf('payment-unknown')).toBeUndefined();
      expect(seen[0]).toBe('/durabletask/instances/payment-known?code=k3y');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await expect(durableHttpStatus('http://127.0.0.1:1/durabletask/')('payment-x')).rejects.toThrow('--skip-run-check');
  });
});
