/**
 * `npm run bench:durable`: the payments consumer on the REAL Durable engine, once per design (`PAYMENTS_DESIGN`), the
 * same workload each time, counted on the wire and printed side by side with the ratios handoff/hold; `--out` writes
 * the whole run as JSON (the input of `npm run cost`). Options and figures: docs/performance.md.
 */
import { writeFileSync } from 'node:fs';
import { installStopSignals } from '../cli/stopSignals';
import { optionReader, parseCommandLine, runTool, UsageError } from '../cli/commandLine';
import { hostTelemetryLines } from '../cost/hostTelemetry';
import { sideBySide, splitLines } from './designSummary';
import { limitLines, sizingTableLines } from '../sizing/sizingLines';
import { paymentLoadOf } from '../sizing/paymentLoad';
import { DEFAULT_REGION } from '../sizing/defaults';
import { runDesign, type DesignReport, type PaymentsDesign } from './paymentsDesignRun';

const USAGE =
  'usage: npm run bench:durable -- [--designs hold,handoff] [--payments N] [--concurrency N] [--provider-ms N] [--idle-seconds N] [--sparse-payments N] [--split-payments N] [--region NAME] [--out FILE] [--json]\n';

async function main(): Promise<void> {
  const values = parseCommandLine(process.argv.slice(2), {
    designs: { type: 'string' },
    payments: { type: 'string' },
    concurrency: { type: 'string' },
    'provider-ms': { type: 'string' },
    'idle-seconds': { type: 'string' },
    'sparse-payments': { type: 'string' },
    'split-payments': { type: 'string' },
    out: { type: 'string' },
    region: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values === 'help') return void process.stdout.write(USAGE);
  const read = optionReader(values);
  const payments = read.integer('payments', { min: 1, max: 10_000, default: 64 });
  const concurrency = read.integer('concurrency', { min: 1, max: 256, default: 16 });
  const providerMs = read.integer('provider-ms', { min: 0, max: 60_000, default: 1_000 });
  const idleSeconds = read.integer('idle-seconds', { min: 1, max: 600, default: 10 });
  const sparsePayments = read.integer('sparse-payments', { min: 0, max: 100, default: 4 });
  const splitPayments = read.integer('split-payments', { min: 0, max: 10_000, default: 64 });
  const json = read.flag('json');
  // The region sets a storage account's request rate (40,000 or 20,000 a second): an input of the sizing below.
  const region = read.optional('region') ?? DEFAULT_REGION;
  read.done();
  const designs = designList(typeof values.designs === 'string' ? values.designs : 'hold,handoff');
  const out = typeof values.out === 'string' ? values.out : undefined;
  installStopSignals('bench:durable');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const runs: Partial<Record<PaymentsDesign, DesignReport>> = {};
  const startedAt = new Date().toISOString();
  for (const design of designs) runs[design] = await runDesign({ design, payments, concurrency, providerMs, idleSeconds, sparsePayments, splitPayments, log });
  const result = {
    kind: 'payments-design-bench',
    version: 1,
    startedAt,
    options: { payments, concurrency, providerMs, idleSeconds, sparsePayments, splitPayments },
    runs,
  };
  if (out) writeFileSync(out, `${JSON.stringify(result, null, 1)}\n`);
  const rows = sideBySide(runs.hold, runs.handoff);
  const width = Math.max(...rows.map((r) => r[0].length), 10);
  process.stdout.write(`${'figure'.padEnd(width)}  ${'hold'.padStart(10)}  ${'handoff'.padStart(10)}  ${'handoff/hold'.padStart(12)}\n`);
  for (const [name, a, b, ratio] of rows) process.stdout.write(`${name.padEnd(width)}  ${a.padStart(10)}  ${b.padStart(10)}  ${ratio.padStart(12)}\n`);
  for (const [design, run] of Object.entries(runs))
    process.stdout.write(
      `${design}: ${run.payments} payments, ${run.providerCharges} charged, ${run.unfinishedInstances} unfinished, ${run.failedInstances} failed orchestrations; ` +
        `acked in ${run.seconds.acked} s, finished in ${run.seconds.finished} s; Durable executions ${JSON.stringify(run.durable.byFunction)}\n`,
    );
  for (const [design, run] of Object.entries(runs))
    for (const line of hostTelemetryLines(design, run.payments, run.hostTelemetry.records, run.hostTelemetry.levels)) process.stdout.write(`${line}\n`);
  for (const line of splitLines(runs.hold, runs.handoff, concurrency, providerMs)) process.stdout.write(`${line}\n`);
  // Every limit of one hub, each with its source and kind, the binding one, and the sizing table with its cost
  // (tools/sizing/, docs/performance.md "Sizing from every limit"); `npm run sizing -- --from FILE` prints the same later.
  for (const run of Object.values(runs)) {
    const load = paymentLoadOf(run);
    for (const line of limitLines(load, { region, partitions: 4, serviceBusUnits: 0, coresPerInstance: 1 })) process.stdout.write(`${line}\n`);
    for (const line of sizingTableLines(load, run, region)) process.stdout.write(`${line}\n`);
  }
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
}

function designList(text: string): PaymentsDesign[] {
  const designs = text.split(',').map((d) => d.trim());
  for (const d of designs) if (d !== 'hold' && d !== 'handoff') throw new UsageError(`--designs must list hold and/or handoff, got ${JSON.stringify(d)}`);
  return [...new Set(designs)] as PaymentsDesign[];
}

runTool('npm run bench:durable', main);
