import { parseArgs } from 'node:util';
import { FakePaymentProvider } from './FakePaymentProvider';

/**
 * `npm run provider`: the fake payment provider on 127.0.0.1, for `func start` and for the demo's
 * PAYMENT_PROVIDER_URL. Honours Idempotency-Key, serves GET /__stats; no faults unless asked.
 * Stops on SIGINT / SIGTERM.
 */
const USAGE = `usage: npm run provider -- [--port 4010] [--seed 1]
  --port  TCP port on 127.0.0.1 (default 4010, the one local.settings.json.example names; 0 = any free port)
  --seed  seed of the provider's own randomness (default 1)`;

async function main(): Promise<number> {
  let values: { port?: string; seed?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ options: { port: { type: 'string' }, seed: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const port = Number(values.port ?? 4010);
  const seed = Number(values.seed ?? 1);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(`--port must be an integer from 0 to 65535, got ${values.port}\n${USAGE}`);
    return 2;
  }
  if (!Number.isInteger(seed)) {
    console.error(`--seed must be an integer, got ${values.seed}\n${USAGE}`);
    return 2;
  }
  const provider = await FakePaymentProvider.start({ port, seed });
  console.log(`fake payment provider listening on ${provider.url} (POST /v1/charges, GET /__stats); Ctrl+C stops it`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await provider.stop();
  console.log(`stopped: ${provider.effectiveCharges} charges`);
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`provider failed: ${(error as Error).message}`);
    process.exitCode = 1;
  },
);
