/**
 * `npm run bench:profile` (docs/performance.md): a CPU profile of fresh messages through `makeIdempotent` (a handler
 * that does nothing: the wrapper, the store and the SDK) on its own Azurite, summed by file. The profile covers the
 * measured messages only (started after a warm-up through `node:inspector`, the profiler `--cpu-prof` starts) and is
 * written as a `.cpuprofile` (Chrome DevTools opens it). `--summarize FILE` sums a profile written by
 * `node --cpu-prof` instead.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { dirname, resolve } from 'node:path';
import { AzuriteTable } from '../azurite/AzuriteTable';
import { optionReader, parseCommandLine, runTool } from '../cli/commandLine';
import { installStopSignals } from '../cli/stopSignals';
import { BenchTables } from './BenchTables';
import { coreFrom, currentCore } from './coreUnderTest';
import { formatProfileSummary, summarizeProfile, type CpuProfile } from './profileSummary';
import { runConcurrent } from './runConcurrent';

const USAGE = `usage: npm run bench:profile -- [options]
  --messages N      fresh messages profiled (default 6000, 1 to 100000), after 500 unprofiled
  --concurrency N   in-flight messages (default 16, 1 to 256)
  --core DIR        profile another build of the core package (a directory with its dist/) instead of this one
  --out FILE        where the .cpuprofile goes (default dist/profiles/fresh-<time>.cpuprofile)
  --summarize FILE  only sum an existing .cpuprofile (e.g. from node --cpu-prof) by file
  --help, -h        this text`;

const WARM_UP = 500;

async function main(): Promise<void> {
  const values = parseCommandLine(process.argv.slice(2), {
    messages: { type: 'string' },
    concurrency: { type: 'string' },
    core: { type: 'string' },
    out: { type: 'string' },
    summarize: { type: 'string' },
  });
  if (values === 'help') return void process.stdout.write(`${USAGE}\n`);
  const read = optionReader(values);
  const messages = read.integer('messages', { min: 1, max: 100_000, default: 6_000 });
  const concurrency = read.integer('concurrency', { min: 1, max: 256, default: 16 });
  const coreDir = read.optional('core');
  const out = read.optional('out') ?? resolve('dist', 'profiles', `fresh-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
  const summarize = read.optional('summarize');
  read.done();
  if (summarize !== undefined) {
    process.stdout.write(`${formatProfileSummary(summarizeProfile(JSON.parse(readFileSync(summarize, 'utf8')) as CpuProfile))}\n`);
    return;
  }
  const core = coreDir === undefined ? currentCore() : coreFrom(coreDir, 'profiled');
  installStopSignals('bench:profile');
  const azurite = await AzuriteTable.start();
  try {
    const table = await new BenchTables(azurite.connectionString).create('prof');
    const store = new core.TableIdempotencyStore(table.client, { retentionMs: 7 * 86_400_000 });
    const handle = core.makeIdempotent(async (msg: { id: string }) => ({ ok: msg.id !== '' }), {
      store,
      keyOf: (msg) => core.keyFromMessageId('bench-profile', msg.id),
    });
    const run = (prefix: string, count: number) => runConcurrent(count, concurrency, async (i) => void (await handle({ id: `${prefix}-${i}` })));
    await run('warm', WARM_UP);
    const profile = await profiled(() => run('fresh', messages));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(profile));
    process.stderr.write(`bench:profile: ${messages} fresh messages profiled; profile written to ${out}\n`);
    process.stdout.write(`${formatProfileSummary(summarizeProfile(profile))}\n`);
  } finally {
    await azurite.stop();
  }
}

/** Runs `work` under the V8 CPU profiler of this process. @returns the profile */
async function profiled(work: () => Promise<unknown>): Promise<CpuProfile> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((done, fail) => session.post(method, params ?? {}, (error, result) => (error ? fail(error) : done(result))));
  try {
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: 100 });
    await post('Profiler.start');
    await work();
    return ((await post('Profiler.stop')) as { profile: CpuProfile }).profile;
  } finally {
    session.disconnect();
  }
}

runTool('npm run bench:profile', main);
