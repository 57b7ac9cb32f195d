/**
 * `npm run bench:durable [-- --payments N --concurrency N --provider-ms N --json]`: the payments consumer on the
 * REAL Durable engine (docs/durable.md), as it is today (it holds each message while it polls the charge's
 * status), with a provider that takes `--provider-ms` (default 1,000) per charge and `--concurrency` deliveries
 * at once (default 16: host.json `maxConcurrentCalls`). Prints, from counts of the run: the consumer's execution
 * time per fresh payment (p50, p99), status polls and starts per payment (counted on the extension's HTTP API
 * through a counting proxy), and payments per second through one host. The "before" figures of issue 23.
 */
import { TableClient } from '@azure/data-tables';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { loadSettings } from '../../src/config/settings';
import { AzuriteTable } from '../azurite/AzuriteTable';
import { installStopSignals } from '../cli/stopSignals';
import { optionReader, parseCommandLine } from '../cli/commandLine';
import { FakePaymentProvider } from '../fakeProvider/FakePaymentProvider';
import { startRealEnginePayments } from '../local/durable/realEnginePayments';
import { percentile, round } from './stats';

/** An HTTP pass-through to the extension's RPC endpoint counting status polls (GET instances/...) and starts (POST orchestrators/...). */
async function countingRpcProxy(target: string) {
  const counts = { statusPolls: 0, starts: 0, other: 0 };
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (req.method === 'GET' && /\/instances\//.test(path)) counts.statusPolls++;
    else if (req.method === 'POST' && /\/orchestrators\//.test(path)) counts.starts++;
    else counts.other++;
    let body = '';
    req.on('data', (c: Buffer) => (body += String(c)));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k)) headers[k] = v;
      fetch(new URL(path, target), { method: req.method, headers, body: req.method === 'GET' ? undefined : body }).then(
        async (answer) => res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text()),
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { counts, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(r)) };
}

async function main(): Promise<void> {
  const values = parseCommandLine(process.argv.slice(2), {
    payments: { type: 'string' },
    concurrency: { type: 'string' },
    'provider-ms': { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values === 'help') return void process.stdout.write('usage: npm run bench:durable -- [--payments N] [--concurrency N] [--provider-ms N] [--json]\n');
  const read = optionReader(values);
  const payments = read.integer('payments', { min: 1, max: 10_000, default: 64 });
  const concurrency = read.integer('concurrency', { min: 1, max: 256, default: 16 });
  const providerMs = read.integer('provider-ms', { min: 0, max: 60_000, default: 1_000 });
  const json = read.flag('json');
  read.done();
  installStopSignals('bench:durable');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const azurite = await AzuriteTable.start();
  const provider = await FakePaymentProvider.start({ latencyMs: providerMs });
  let proxy: Awaited<ReturnType<typeof countingRpcProxy>> | undefined;
  try {
    const settings = loadSettings({
      IDEMPOTENCY_TABLE_CONNECTION_STRING: azurite.connectionString,
      PAYMENT_PROVIDER_URL: provider.url,
      IDEMPOTENCY_CACHE_SIZE: '0',
    });
    const table = (name: string) => TableClient.fromConnectionString(azurite.connectionString, `bench${name}`, { allowInsecureConnection: true });
    log('bench:durable: starting the real Durable engine...');
    proxy = await countingRpcProxy('http://127.0.0.1:17071');
    const rpc = proxy.url;
    const real = await startRealEnginePayments({
      settings,
      overrides: { tableClient: table },
      clientBinding: (client) => {
        const data = JSON.parse(client) as { rpcBaseUrl: string };
        return JSON.stringify({ ...data, rpcBaseUrl: `${rpc}/durabletask/` });
      },
    });
    try {
      await Promise.all([real.parts.store.ensureTable(), real.parts.parking.ensureTable()]);
      log(`bench:durable: ${payments} payments, ${concurrency} at once, provider ${providerMs} ms...`);
      const executionMs: number[] = [];
      let next = 0;
      let failedDeliveries = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          for (let i = next++; i < payments; i = next++) {
            const id = `bench-${i}`;
            const body = JSON.stringify({ paymentId: id, customerId: 'c', amount: 100 + i, currency: 'EUR' });
            for (let deliveryCount = 1; ; deliveryCount++) {
              const t0 = performance.now();
              try {
                await real.deliver(body, { messageId: id, deliveryCount });
                executionMs.push(performance.now() - t0);
                break;
              } catch {
                executionMs.push(performance.now() - t0);
                failedDeliveries++;
              }
            }
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const report = {
        design: 'holding (today: the delivery polls the orchestration until the charge finishes)',
        payments,
        concurrency,
        providerMs,
        consumerExecutionMs: { p50: round(percentile(executionMs, 50), 0), p99: round(percentile(executionMs, 99), 0) },
        deliveries: executionMs.length,
        failedDeliveries,
        statusPollsPerPayment: round(proxy.counts.statusPolls / payments, 2),
        startsPerPayment: round(proxy.counts.starts / payments, 2),
        paymentsPerSecond: round(payments / seconds, 2),
        providerCharges: provider.charges.length,
        seconds: round(seconds, 1),
      };
      if (json) process.stdout.write(`${JSON.stringify(report)}\n`);
      else for (const [k, v] of Object.entries(report)) process.stdout.write(`${k.padEnd(24)} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`);
    } finally {
      await real.close();
    }
  } finally {
    await proxy?.close();
    await provider.stop();
    await azurite.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:durable crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
