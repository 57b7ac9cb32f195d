import { optionReader, parseCommandLine, runTool } from '../cli/commandLine';
import { FakePaymentProvider } from './FakePaymentProvider';

/** `npm run provider`: the fake payment provider on 127.0.0.1, for `func start` and the demo's PAYMENT_PROVIDER_URL. */
const USAGE = `usage: npm run provider -- [--port 4010] [--seed 1] [--key-memory-hours H] [--lookup by-key|none] [--list by-window|none]
  --port  TCP port on 127.0.0.1 (default 4010, the one local.settings.json.example names; 0 = any free port)
  --seed  seed of the provider's own randomness (default 1, 0 to 4294967295)
  --key-memory-hours H  forget an Idempotency-Key H hours after its first use (default: never; Stripe: 24;
          0: every call with a finished key charges again)
  --lookup by-key|none  GET /v1/charges?idempotency_key= lists the charges under a key (default by-key), or answers 404
          (none: Stripe-shaped; run the app with PAYMENT_PROVIDER_LOOKUP=none)
  --list by-window|none  GET /v1/charges?created_gte=&created_lt=&limit= lists the charges of a time window, cursor-paged
          (default by-window: the ledger check's list; run the app with PAYMENT_PROVIDER_LEDGER=list), or answers 404
          (none: a provider without a list, as Adyen; PAYMENT_PROVIDER_LEDGER=none)
  --help, -h  this text`;

/**
 * Parses the provider's command line with the tools' shared parser.
 * @throws UsageError naming every bad option.
 */
export function parseProviderArgs(
  argv: readonly string[],
): { port: number; seed: number; keyMemoryMs?: number; lookup: 'by-key' | 'none'; list: 'by-window' | 'none' } | 'help' {
  const values = parseCommandLine(argv, {
    port: { type: 'string' },
    seed: { type: 'string' },
    'key-memory-hours': { type: 'string' },
    lookup: { type: 'string' },
    list: { type: 'string' },
  });
  if (values === 'help') return 'help';
  const read = optionReader(values);
  const options = {
    port: read.integer('port', { min: 0, max: 65_535, default: 4010 }),
    seed: read.integer('seed', { min: 0, max: 2 ** 32 - 1, default: 1 }),
    lookup: read.choice('lookup', ['by-key', 'none'] as const, 'by-key'),
    list: read.choice('list', ['by-window', 'none'] as const, 'by-window'),
    ...(values['key-memory-hours'] === undefined
      ? {}
      : { keyMemoryMs: read.number('key-memory-hours', { min: 0, max: 87_600, default: Number.NaN }) * 3_600_000 }),
  };
  read.done();
  return options;
}

async function main(): Promise<void> {
  const options = parseProviderArgs(process.argv.slice(2));
  if (options === 'help') return void console.log(USAGE);
  const { port, seed, keyMemoryMs, lookup, list } = options;
  const provider = await FakePaymentProvider.start({ port, seed, keyMemoryMs, lookup, list });
  const lookupText = lookup === 'none' ? 'GET /v1/charges?idempotency_key= answers 404' : 'GET /v1/charges?idempotency_key=';
  const listText = list === 'none' ? 'GET /v1/charges?created_gte= answers 404' : 'GET /v1/charges?created_gte=&created_lt=';
  console.log(`fake payment provider listening on ${provider.url} (POST /v1/charges, ${lookupText}, ${listText}, GET /__stats); Ctrl+C stops it`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await provider.stop();
  console.log(`stopped: ${provider.effectiveCharges} charges`);
}

if (require.main === module) runTool('npm run provider', main);
