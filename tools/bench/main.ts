/**
 * `npm run bench` (docs/performance.md): on its own Azurite (in memory, loopback, stopped in every case), the
 * store's round trips per message, throughput against the same handler without idempotency, fresh-claim latency,
 * the expiry sweep, and the Cosmos store beside the Table store. Options and exit codes: `BENCH_USAGE`.
 */
import { performance } from 'node:perf_hooks';
import { AzuriteTable } from '../azurite/AzuriteTable';
import { BenchTables } from './BenchTables';
import { runTool } from '../cli/commandLine';
import { installStopSignals } from '../cli/stopSignals';
import { BENCH_USAGE, parseBenchOptions } from './options';
import { measurePurgeSection } from './purgeSection';
import { buildReport, formatTable } from './report';
import { formatCosmosSection, measureCosmosSection } from './cosmosSection';
import { measureRoundTrips } from './roundTripSection';
import { measureThroughput } from './throughputSection';
import { coreFrom, currentCore } from './coreUnderTest';
import { measureOverhead } from './overheadSection';
import { formatOverheadSection } from './overheadReport';

/** Expired records the sweep measurement seeds and deletes (about 2,000 per partition of 16: two query pages each). */
const PURGE_RECORDS = 32_000;

async function main(): Promise<void> {
  const options = parseBenchOptions(process.argv.slice(2));
  if (options === 'help') return void process.stdout.write(`${BENCH_USAGE}\n`);
  // Progress goes to stderr so that stdout holds only the report (with --json: one JSON line).
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const started = performance.now();
  log('bench: starting Azurite (in memory, loopback)...');
  // SIGINT / SIGTERM stop Azurite (it registers its stop) and exit 130 / 143.
  installStopSignals('bench');
  const azurite = await AzuriteTable.start();
  try {
    const tables = new BenchTables(azurite.connectionString);
    const cores = [
      currentCore(),
      ...(options.coreBefore === undefined ? [] : [coreFrom(options.coreBefore, 'before')]),
      ...(options.compare ?? []).map(({ label, dir }) => coreFrom(dir, label)),
    ];
    const measureOverheadSection = () => {
      log(`bench: the wrapper's overhead over raw SDK calls, ${options.rounds} rounds + 1 warm-up, ${options.messages} messages per path...`);
      return measureOverhead(tables, cores, { ...options, log });
    };
    if (options.overheadOnly) {
      const overhead = await measureOverheadSection();
      process.stdout.write(options.json ? `${JSON.stringify({ overhead })}\n` : `${formatOverheadSection(overhead)}\n`);
      return;
    }
    log(`bench: round trips per message (${options.messages} messages each)...`);
    const roundTrips = await measureRoundTrips(tables, options.messages, options.concurrency);
    log(`bench: throughput, ${options.rounds} rounds + 1 warm-up, ${options.messages} messages per variant, concurrency ${options.concurrency}...`);
    const throughput = await measureThroughput(tables, azurite.pid, { ...options, log });
    const overhead = await measureOverheadSection();
    log('bench: expiry sweep...');
    const purge = await measurePurgeSection(azurite.connectionString, PURGE_RECORDS);
    log('bench: the Cosmos store beside the Table store (in-process Cosmos emulator)...');
    const cosmos = await measureCosmosSection(options.messages, options.concurrency, roundTrips);
    const report = buildReport(options, roundTrips, throughput, purge, (performance.now() - started) / 1000);
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ ...report, overhead, cosmos })}\n`);
    } else {
      process.stdout.write(`${formatTable(report, throughput)}\n`);
      process.stdout.write(`\n${formatOverheadSection(overhead)}\n`);
      process.stdout.write(`\n${formatCosmosSection(cosmos)}\n`);
    }
  } finally {
    await azurite.stop();
  }
}

runTool('npm run bench', main);
