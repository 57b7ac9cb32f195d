/**
 * `npm run sizing -- --from FILE [--region NAME] [--targets 500,2000,10000] [--design handoff]`: the limits of one
 * task hub and the sizing table (shards, partitions, accounts, Service Bus tier and units, Flex instances, cost) from
 * the counts of a saved `npm run bench:durable -- --out FILE` run, without running the engine again. The same lines
 * `npm run bench:durable` prints after a run. docs/performance.md "Sizing from every limit".
 */
import { readFileSync } from 'node:fs';
import { optionReader, parseCommandLine, runTool, UsageError } from '../cli/commandLine';
import type { RunCounts } from '../cost/costModel';
import { paymentLoadOf, type SizingRun } from './paymentLoad';
import { DEFAULT_REGION } from './defaults';
import { limitLines, SIZING_TARGETS, sizingTableLines } from './sizingLines';

async function main(): Promise<void> {
  const values = parseCommandLine(process.argv.slice(2), {
    from: { type: 'string' },
    region: { type: 'string' },
    targets: { type: 'string' },
    design: { type: 'string' },
  });
  if (values === 'help')
    return void process.stdout.write('usage: npm run sizing -- --from FILE [--region NAME] [--targets 500,2000,10000] [--design handoff]\n');
  const read = optionReader(values);
  const from = read.optional('from');
  if (from === undefined) read.problem('--from is required (the JSON of npm run bench:durable -- --out FILE)');
  const region = read.optional('region') ?? DEFAULT_REGION;
  const design = read.optional('design') ?? 'handoff';
  const targetsText = read.optional('targets');
  read.done();
  const targets = targetsText ? targetsText.split(',').map(Number) : [...SIZING_TARGETS];
  if (targets.some((t) => !(t > 0))) throw new UsageError(`--targets must be positive numbers, got ${targetsText}`);
  const bench = JSON.parse(readFileSync(from!, 'utf8')) as { runs?: Record<string, RunCounts & SizingRun> };
  const run = bench.runs?.[design];
  if (!run) throw new UsageError(`${from} has no ${design} run`);
  const load = paymentLoadOf(run);
  for (const line of limitLines(load, { region, partitions: 4, serviceBusUnits: 0, coresPerInstance: 1 })) process.stdout.write(`${line}\n`);
  for (const line of sizingTableLines(load, run, region, targets)) process.stdout.write(`${line}\n`);
}

runTool('npm run sizing', main);
