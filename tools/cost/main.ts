/**
 * `npm run cost -- --from FILE [--prices name=value,...] [--memory-gb N] [--always-ready-instances N]
 * [--azure-polling-ms N] [--item-overhead-bytes N] [--host-bytes-per-execution N] [--json]`: dollars per million
 * payments from the counts of one `npm run bench:durable -- --out FILE` run, for every design the run measured,
 * side by side. Prices are list prices (tools/cost/prices.ts: date, region and sources printed), overridable.
 * Exit 0; 1 when the file cannot be read; 2 on a bad option.
 */
import { readFileSync } from 'node:fs';
import { optionReader, parseCommandLine, USAGE_EXIT_CODE, UsageError, usageErrorLine } from '../cli/commandLine';
import { costPerMillion, termsOf, type CostEstimate, type CostLine, type CostOptions, type RunCounts } from './costModel';
import { DEFAULT_PRICES, PRICE_SOURCES, PRICES_AS_OF, pricesWith, type Prices } from './prices';

const USAGE = `usage: npm run cost -- --from <bench json> [options]
  --from FILE                    the JSON of \`npm run bench:durable -- --out FILE\`
  --prices name=value,...        override list prices (USD per unit): ${Object.keys(DEFAULT_PRICES).join(', ')}
  --memory-gb N                  Flex instance memory (default 2: instanceMemoryMB 2048)
  --always-ready-instances N     always-ready instances of the durable group (default 1)
  --azure-polling-ms N           host.json maxQueuePollingInterval in Azure (default 10000)
  --item-overhead-bytes N        Application Insights bytes per log item beyond the record (default 0: not measured)
  --host-bytes-per-execution N   the Functions host's telemetry per execution (default 0: not measured here)
  --json                         one JSON object on stdout
`;

function main(): void {
  const values = parseCommandLine(process.argv.slice(2), {
    from: { type: 'string' },
    prices: { type: 'string' },
    'memory-gb': { type: 'string' },
    'always-ready-instances': { type: 'string' },
    'azure-polling-ms': { type: 'string' },
    'item-overhead-bytes': { type: 'string' },
    'host-bytes-per-execution': { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values === 'help') return void process.stdout.write(USAGE);
  const read = optionReader(values);
  const from = read.optional('from');
  if (from === undefined) read.problem('--from is required (the JSON of npm run bench:durable -- --out FILE)');
  const memoryGb = read.number('memory-gb', { min: 0.5, max: 4, default: 2 });
  const alwaysReadyInstances = read.integer('always-ready-instances', { min: 0, max: 100, default: 1 });
  const azureMaxQueuePollingMs = read.integer('azure-polling-ms', { min: 100, max: 600_000, default: 10_000 });
  const telemetryItemOverheadBytes = read.integer('item-overhead-bytes', { min: 0, max: 100_000, default: 0 });
  const hostTelemetryBytesPerExecution = read.integer('host-bytes-per-execution', { min: 0, max: 1_000_000, default: 0 });
  const json = read.flag('json');
  let prices: Prices = { ...DEFAULT_PRICES };
  try {
    const text = read.optional('prices');
    prices = pricesWith(text ? text.split(',') : []);
  } catch (error) {
    read.problem((error as Error).message);
  }
  read.done();
  const bench = JSON.parse(readFileSync(from!, 'utf8')) as { kind?: string; runs?: Record<string, RunCounts>; startedAt?: string };
  if (bench.kind !== 'payments-design-bench' || !bench.runs || Object.keys(bench.runs).length === 0)
    throw new Error(`${from} is not the JSON of npm run bench:durable -- --out (no runs)`);
  const options = {
    prices,
    memoryGb,
    alwaysReadyInstances,
    azureMaxQueuePollingMs,
    telemetryItemOverheadBytes,
    hostTelemetryBytesPerExecution,
    secondsPerMonth: 30 * 86_400,
  };
  const estimates = Object.values(bench.runs).map((run) => costPerMillion(run, options));
  if (json)
    return void process.stdout.write(`${JSON.stringify({ from, benchStartedAt: bench.startedAt, pricesAsOf: PRICES_AS_OF, prices, options, estimates })}\n`);
  process.stdout.write(`Cost per million payments from ${from} (bench run ${bench.startedAt ?? '?'}).\n`);
  process.stdout.write(`LIST PRICES (USD, East US, pay-as-you-go) as recorded on ${PRICES_AS_OF}, not live: override with --prices.\n`);
  for (const source of PRICE_SOURCES) process.stdout.write(`  source: ${source}\n`);
  print(estimates);
  printBySize(Object.values(bench.runs), options);
}

/** Flex's instance sizes (learn.microsoft.com/azure/azure-functions/flex-consumption-plan, "Instance memory"). */
const FLEX_SIZES = [
  { gb: 0.5, cores: 0.25 },
  { gb: 2, cores: 1 },
  { gb: 4, cores: 2 },
];

/**
 * The totals and the largest term at each Flex instance size (`instanceMemoryMB`), from the same counts. The
 * execution times are this run's: on a smaller instance (fewer cores) they are longer, which the 1 s minimum per
 * execution absorbs while they stay under it.
 */
function printBySize(runs: readonly RunCounts[], options: Omit<CostOptions, 'memoryGb'>): void {
  const money = (n: number) => `$${n >= 100 ? n.toFixed(0) : n.toFixed(2)}`;
  process.stdout.write('\nBy instance size (infra instanceMemoryMB): total per million, compute (GB-s) of it, the largest term:\n');
  for (const size of FLEX_SIZES)
    for (const run of runs) {
      const e = costPerMillion(run, { ...options, memoryGb: size.gb });
      const view = (name: string, lines: readonly CostLine[] | undefined, total: number | undefined) => {
        if (!lines || total === undefined) return `${name} -`;
        const { terms, largest } = termsOf(lines);
        return `${name} ${money(total)} (compute ${money(terms.compute)}, largest: ${largest} ${money(terms[largest])})`;
      };
      process.stdout.write(
        `  ${`${size.gb * 1024} MB (${size.cores} core${size.cores > 1 ? 's' : ''})`.padEnd(20)} ${run.design.padEnd(8)} ${view('busy', e.variable.busy, e.totals.variableBusy)}; ` +
          `${view('alone', e.variable.sparse, e.totals.variableSparse)}; fixed ${money(e.totals.fixedPerMonth)}/month\n`,
      );
    }
}

function print(estimates: readonly CostEstimate[]): void {
  /** The largest term of each design's view (compute, storage, Service Bus, executions, Application Insights). */
  const termLine = (views: ReadonlyArray<readonly CostLine[] | undefined>) =>
    process.stdout.write(
      `${'  largest term'.padEnd(96)}${views
        .map((lines) => {
          if (!lines) return `${''.padStart(18)}${'-'.padStart(14)}`;
          const { terms, largest } = termsOf(lines);
          return `${largest.padStart(18)}${money(terms[largest]).padStart(14)}`;
        })
        .join('')}\n`,
    );
  const money = (n: number) => `$${n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(4)}`;
  const count = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 0.01 || n === 0 ? n.toFixed(2) : n.toExponential(2));
  const designs = estimates.map((e) => e.design);
  const head = (title: string) =>
    process.stdout.write(`\n${title}\n${'line'.padEnd(96)}${designs.map((d) => `${`${d} /payment`.padStart(18)}${`${d} $/M`.padStart(14)}`).join('')}\n`);
  const rows = (pick: (e: CostEstimate) => readonly { name: string; perPayment: number; usdPerMillion: number }[]) => {
    const names = [...new Set(estimates.flatMap((e) => pick(e).map((l) => l.name)))];
    for (const name of names) {
      const cells = estimates.map((e) => {
        const l = pick(e).find((x) => x.name === name);
        return l ? `${count(l.perPayment).padStart(18)}${money(l.usdPerMillion).padStart(14)}` : `${'-'.padStart(18)}${'-'.padStart(14)}`;
      });
      process.stdout.write(`${name.slice(0, 95).padEnd(96)}${cells.join('')}\n`);
    }
  };
  head('Per million payments, compute as run (executions overlapping on one busy instance):');
  rows((e) => e.variable.busy);
  process.stdout.write(`${'TOTAL (busy)'.padEnd(96)}${estimates.map((e) => `${''.padStart(18)}${money(e.totals.variableBusy).padStart(14)}`).join('')}\n`);
  termLine(estimates.map((e) => e.variable.busy));
  head('Per million payments, compute as measured for payments one at a time (thin traffic: each billed alone):');
  rows((e) => e.variable.sparse ?? []);
  process.stdout.write(
    `${'TOTAL (sparse)'.padEnd(96)}${estimates.map((e) => `${''.padStart(18)}${(e.totals.variableSparse === undefined ? '-' : money(e.totals.variableSparse)).padStart(14)}`).join('')}\n`,
  );
  termLine(estimates.map((e) => e.variable.sparse));
  process.stdout.write('\nPer month whatever the traffic (count per month, $ per month):\n');
  for (const e of estimates)
    for (const l of e.fixedPerMonth) process.stdout.write(`  ${e.design}: ${l.name}: ${count(l.perMillion)} ${l.unit} -> ${money(l.usdPerMillion)}\n`);
}

try {
  main();
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${usageErrorLine(error, 'npm run cost')}\n`);
    process.exitCode = USAGE_EXIT_CODE;
  } else {
    process.stderr.write(`cost: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
