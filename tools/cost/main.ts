/**
 * `npm run cost -- --from FILE [--prices name=value,...] [--memory-gb N] [--always-ready-instances N]
 * [--azure-polling-ms N] [--item-overhead-bytes N] [--host-bytes-per-execution N] [--queue-ops N]
 * [--payments-per-month N] [--host-json FILE] [--event-hubs-tus N] [--shards N] [--service-bus-units N] [--rate N] [--json]`:
 * dollars per million payments from the
 * counts of one `npm run bench:durable -- --out FILE` run, for every design the run measured, side by side; then the
 * goal check (busy at most $60 a million) at the Durable queue operations counted and at `--queue-ops` (12: issue 37's
 * target), the Cosmos store's lines, a month at `--payments-per-month` with the free grants applied, and the totals by
 * Flex instance size, and the shard counts (infra shardCount) at `--rate` payments a second. Prices are list prices (tools/cost/prices.ts: date, region, sources and whether read here).
 * Exit 0; 1 when the file cannot be read; 2 on a bad option.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { optionReader, parseCommandLine, USAGE_EXIT_CODE, UsageError, usageErrorLine } from '../cli/commandLine';
import { costPerMillion, type CostEstimate, type CostLine, type CostOptions, type RunCounts } from './costModel';
import { cosmosStoreLines, queueOpsForGoal, termsOf } from './costTerms';
import { hostJsonLogLevels } from './hostTelemetry';
import { monthBill } from './monthView';
import { printShards } from './shardsView';
import { DEFAULT_PRICES, PRICE_SOURCES, PRICES_AS_OF, pricesWith, type Prices } from './prices';

/** Issue 37's goal: busy dollars per million payments. */
const GOAL_USD_PER_MILLION = 60;

const USAGE = `usage: npm run cost -- --from <bench json> [options]
  --from FILE                    the JSON of \`npm run bench:durable -- --out FILE\`
  --prices name=value,...        override list prices (USD per unit): ${Object.keys(DEFAULT_PRICES).join(', ')}
  --memory-gb N                  Flex instance memory (default 2: instanceMemoryMB 2048)
  --always-ready-instances N     always-ready instances of the durable group (default 1)
  --azure-polling-ms N           host.json maxQueuePollingInterval in Azure (default 10000)
  --item-overhead-bytes N        Application Insights bytes per log item beyond the record (default 0: not measured)
  --host-bytes-per-execution N   bytes per execution added to the host's measured telemetry (default 0)
  --queue-ops N                  Durable queue class-1 ops a payment to price besides those counted (default 12: issue 37's target)
  --payments-per-month N         the month view's payments (default 1000000)
  --host-json FILE               host.json whose logging.logLevel prices the host's records (default ./host.json)
  --event-hubs-tus N             Event Hubs Standard throughput units (default 1: infra)
  --shards N                     payment shards (infra shardCount, 1-64; default 1): fixed lines per shard
  --service-bus-units N          Service Bus Premium messaging units (default 0: Standard, infra serviceBusSku)
  --rate N                       payments a second for the shards view (default 2000)
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
    'queue-ops': { type: 'string' },
    'payments-per-month': { type: 'string' },
    'host-json': { type: 'string' },
    'event-hubs-tus': { type: 'string' },
    shards: { type: 'string' },
    'service-bus-units': { type: 'string' },
    rate: { type: 'string' },
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
  const targetQueueOps = read.number('queue-ops', { min: 0, max: 1_000, default: 12 });
  const paymentsPerMonth = read.integer('payments-per-month', { min: 0, max: 1e12, default: 1_000_000 });
  const eventHubsThroughputUnits = read.integer('event-hubs-tus', { min: 0, max: 40, default: 1 });
  const shards = read.integer('shards', { min: 1, max: 64, default: 1 });
  const serviceBusUnits = read.integer('service-bus-units', { min: 0, max: 64, default: 0 });
  if (![0, 1, 2, 4, 8, 16, 32, 64].includes(serviceBusUnits)) read.problem('--service-bus-units must be 0 (Standard), 1, 2, 4, 8, 16, 32 or 64');
  const rate = read.number('rate', { min: 1, max: 1e6, default: 2000 });
  const hostJson = read.optional('host-json') ?? 'host.json';
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
    eventHubsThroughputUnits,
    shards,
    serviceBusPremiumUnits: serviceBusUnits === 0 ? undefined : serviceBusUnits,
  };
  const runs = Object.values(bench.runs);
  const levels = existsSync(hostJson) ? hostJsonLogLevels(path.resolve(hostJson)) : undefined;
  /** The levels of `host.json` where they are no lower than the run's (records below those were not counted). */
  const pricedOptions = (run: RunCounts): CostOptions => {
    if (!levels || !run.hostTelemetry) return options;
    try {
      costPerMillion(run, { ...options, hostLogLevels: levels });
      return { ...options, hostLogLevels: levels };
    } catch {
      return options;
    }
  };
  const estimates = runs.map((run) => costPerMillion(run, options));
  const priced = runs.map((run) => costPerMillion(run, pricedOptions(run)));
  const targets = runs.map((run) => costPerMillion(run, { ...pricedOptions(run), durableQueueOpsPerPayment: targetQueueOps }));
  if (json)
    return void process.stdout.write(
      `${JSON.stringify({ from, benchStartedAt: bench.startedAt, pricesAsOf: PRICES_AS_OF, prices, options, hostJsonLevels: levels, estimates, priced, targets })}\n`,
    );
  process.stdout.write(`Cost per million payments from ${from} (bench run ${bench.startedAt ?? '?'}).\n`);
  process.stdout.write(
    `LIST PRICES (USD, pay-as-you-go, East US where found) as of ${PRICES_AS_OF}, NOT read from a live page (checked against copies where said): override with --prices.\n`,
  );
  const statusText = { read: 'rule read here', copy: 'price checked here against a copy', recorded: 'price NOT checked here, as recorded' } as const;
  for (const source of PRICE_SOURCES)
    process.stdout.write(
      `  ${statusText[source.status]} ${source.asOf}: ${source.covers}: ${source.url}${source.evidence ? `\n      (${source.evidence})` : ''}\n`,
    );
  print(estimates, "the run's host.json levels");
  if (levels && priced.some((e, i) => e.totals.variableBusy !== estimates[i].totals.variableBusy)) {
    process.stdout.write(`\nThe same at ${hostJson}'s logging.logLevel ${JSON.stringify(levels)} (the Application Insights lines change):\n`);
    printApplicationInsights(priced);
  }
  printGoal(runs, priced, targets, targetQueueOps, pricedOptions);
  printCosmos(priced, options.prices);
  printMonth(priced, paymentsPerMonth);
  printBySize(runs, pricedOptions);
  printShards(runs, pricedOptions, rate, Math.max(1, serviceBusUnits));
}

/** The goal: busy per million at most $60, at the queue operations counted and at the target; the largest term; what is unmeasured. */
function printGoal(
  runs: readonly RunCounts[],
  counted: readonly CostEstimate[],
  target: readonly CostEstimate[],
  targetOps: number,
  optionsOf: (run: RunCounts) => CostOptions,
): void {
  process.stdout.write(
    `\nGoal: busy cost per million payments at most $${GOAL_USD_PER_MILLION} (Durable queue class-1 ops a payment: as counted, then ${targetOps}):\n`,
  );
  runs.forEach((run, i) => {
    const same = Math.abs(counted[i].durableQueueOpsPerPayment - target[i].durableQueueOpsPerPayment) < 0.005;
    for (const e of same ? [counted[i]] : [counted[i], target[i]]) {
      const { terms, largest } = termsOf(e.variable.busy);
      const verdict = e.totals.variableBusy <= GOAL_USD_PER_MILLION ? 'MEETS' : 'misses';
      process.stdout.write(
        `  ${run.design.padEnd(8)} ${`${round(e.durableQueueOpsPerPayment)} queue ops`.padEnd(14)} busy $${e.totals.variableBusy.toFixed(2)} ${verdict} the goal; ` +
          `largest term ${largest} $${terms[largest].toFixed(2)} (storage $${terms.storage.toFixed(2)}, compute $${terms.compute.toFixed(2)}, ` +
          `Application Insights $${terms.applicationInsights.toFixed(2)}); unmeasured: ${e.unmeasured.length ? e.unmeasured.join('; ') : 'none'}\n`,
      );
    }
    const sizes = FLEX_SIZES.map((size) => {
      const ops = queueOpsForGoal(run, { ...optionsOf(run), memoryGb: size.gb }, GOAL_USD_PER_MILLION);
      return `${size.gb * 1024} MB: ${ops === undefined ? 'none suffices' : `at most ${ops.toFixed(1)}`}`;
    });
    process.stdout.write(`  ${run.design.padEnd(8)} queue class-1 ops a payment that meet the goal busy: ${sizes.join('; ')}\n`);
  });
}

/** IDEMPOTENCY_STORE=cosmos: the claim tables' line replaced by the Cosmos store's RUs (TTL deletions included). */
function printCosmos(estimates: readonly CostEstimate[], prices: Prices): void {
  const cosmos = cosmosStoreLines(prices);
  process.stdout.write('\nWith IDEMPOTENCY_STORE=cosmos (serverless; RU figures typical, not measured: the emulator charges 1 RU a request):\n');
  for (const l of cosmos) process.stdout.write(`  ${l.name}: ${l.perPayment} RU a payment -> $${l.usdPerMillion.toFixed(2)} per million\n`);
  for (const e of estimates) {
    const claim = e.variable.busy.filter((l) => l.name.startsWith('storage: claim tables')).reduce((a, l) => a + l.usdPerMillion, 0);
    const total = e.totals.variableBusy - claim + cosmos.reduce((a, l) => a + l.usdPerMillion, 0);
    process.stdout.write(`  ${e.design}: busy $${total.toFixed(2)} per million (claim tables $${claim.toFixed(2)} replaced)\n`);
  }
}

/** A month of `paymentsPerMonth` payments, grants applied, in the busy and the sparse view. */
function printMonth(estimates: readonly CostEstimate[], paymentsPerMonth: number): void {
  process.stdout.write(
    `\nA month of ${paymentsPerMonth.toLocaleString('en-US')} payments, free grants applied (Flex on demand 100,000 GB-s + 250,000 executions, ` +
      'Service Bus 13 M operations, Log Analytics 5 GB; per subscription or billing account: other apps share them), fixed lines included:\n',
  );
  for (const e of estimates)
    for (const [name, view] of [
      ['busy', e.variable.busy],
      ['alone', e.variable.sparse],
    ] as const) {
      if (!view) continue;
      const bill = monthBill(e, view, paymentsPerMonth);
      const granted = bill.lines.reduce((a, l) => a + (l.usdBeforeGrant - l.usd), 0);
      process.stdout.write(`  ${e.design.padEnd(8)} ${name.padEnd(6)} $${bill.total.toFixed(2)} a month (grants took $${granted.toFixed(2)} off)\n`);
    }
}

const round = (n: number) => Math.round(n * 100) / 100;

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
function printBySize(runs: readonly RunCounts[], optionsOf: (run: RunCounts) => CostOptions): void {
  const money = (n: number) => `$${n >= 100 ? n.toFixed(0) : n.toFixed(2)}`;
  process.stdout.write(
    '\nBy instance size (infra instanceMemoryMB): total per million, compute (GB-s) of it, the largest term. Thin traffic ("alone") is decided by\n' +
      "the size: Flex bills each active period at least 1 s x the instance's memory. To choose, measure in Azure the instance's memory working set\n" +
      "(512 MB leaves about 240 MB after the 272 MB Flex reserves) and the executions' durations on its 0.25 core:\n",
  );
  for (const size of FLEX_SIZES)
    for (const run of runs) {
      const e = costPerMillion(run, { ...optionsOf(run), memoryGb: size.gb });
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

/** The Application Insights lines of each design, busy view. */
function printApplicationInsights(estimates: readonly CostEstimate[]): void {
  for (const e of estimates) {
    for (const l of e.variable.busy.filter((x) => x.unit === 'GB'))
      process.stdout.write(`  ${e.design}: ${l.name.slice(0, 110)}: ${(l.perPayment * 1e9).toFixed(0)} B a payment -> $${l.usdPerMillion.toFixed(2)}\n`);
    process.stdout.write(`  ${e.design}: TOTAL (busy) $${e.totals.variableBusy.toFixed(2)}\n`);
  }
}

function print(estimates: readonly CostEstimate[], levelsNote: string): void {
  /** The largest term of each design's view (compute, storage, Service Bus, executions, Application Insights). */
  const termLine = (views: ReadonlyArray<readonly CostLine[] | undefined>) =>
    process.stdout.write(
      `${'  largest term'.padEnd(96)}${views
        .map((lines) => {
          if (!lines) return `${''.padStart(18)}${'-'.padStart(14)}`;
          const { terms, largest } = termsOf(lines);
          return `${largest.padStart(20)}${money(terms[largest]).padStart(12)}`;
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
  head(`Per million payments, compute as run (executions overlapping on one busy instance), host telemetry at ${levelsNote}:`);
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
