// Re-runs alone each mutant the simulator runner reported as `Timeout` (docs/mutation.md): on a busy machine a run can
// outlast Stryker's timeout with nothing wrong, and a timeout counts as detected. Run right after a simulator run made
// with `--cleanTempDir false` (its sandbox, instrumented and built, is kept under .stryker-tmp/sim/):
//
//   npx stryker run tools/mutation/stryker.sim.config.mjs --mutate <files> --cleanTempDir false
//   node tools/mutation/verifyTimeouts.mjs sim [--limit-s 900]
//
// Each timed-out mutant whose id that sandbox holds is run once, one at a time, as the command runner runs it
// (`__STRYKER_ACTIVE_MUTANT__`), with a far longer limit: exit 1 (an invariant broke) is a real kill, exit 0 a
// survivor, still running at the limit a real timeout. Prints one line a mutant and writes
// reports/mutation/sim/timeouts-verified.json; Stryker's own report is left as it is.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIM_SEEDS } from './stryker.sim.config.mjs';

const [runner = 'sim', ...rest] = process.argv.slice(2);
if (runner !== 'sim') {
  console.error('usage: node tools/mutation/verifyTimeouts.mjs sim [--limit-s N] (the jest runner reports few timeouts)');
  process.exit(2);
}
const limitAt = rest.indexOf('--limit-s');
const limitS = limitAt >= 0 ? Number(rest[limitAt + 1]) : 900;

const root = process.cwd();
const report = join(root, 'reports', 'mutation', 'sim', 'mutation.json');
const tmp = join(root, '.stryker-tmp', 'sim');
const sandboxes = existsSync(tmp)
  ? readdirSync(tmp)
      .filter((d) => d.startsWith('sandbox-'))
      .map((d) => join(tmp, d))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
  : [];
const sandbox = sandboxes.find((d) => existsSync(join(d, 'dist', 'tools', 'simulate', 'main.js')));
if (!existsSync(report) || !sandbox) {
  console.error('needs reports/mutation/sim/mutation.json and a kept, built sandbox: run the simulator runner with --cleanTempDir false first');
  process.exit(2);
}

const { files } = JSON.parse(readFileSync(report, 'utf8'));
const results = [];
for (const [file, { mutants }] of Object.entries(files)) {
  const instrumented = join(sandbox, file);
  const text = existsSync(instrumented) ? readFileSync(instrumented, 'utf8') : '';
  for (const m of mutants.filter((x) => x.status === 'Timeout')) {
    const where = `${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} ${JSON.stringify(m.replacement ?? '').slice(0, 60)}`;
    // Only the mutants of this sandbox's run: ids are per run.
    if (!text.includes(`("${m.id}")`)) {
      results.push({ where, id: m.id, verdict: 'not in this sandbox' });
      continue;
    }
    const started = Date.now();
    const run = spawnSync(process.execPath, ['dist/tools/simulate/main.js', '--seeds', String(SIM_SEEDS)], {
      cwd: sandbox,
      env: { ...process.env, __STRYKER_ACTIVE_MUTANT__: m.id },
      timeout: limitS * 1000,
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    const verdict = run.error
      ? `Timeout (still running after ${limitS} s)`
      : run.status === 1
        ? 'Killed'
        : run.status === 0
          ? 'Survived'
          : `exit ${run.status}`;
    const broke = /INVARIANT BROKEN (\S+)/.exec(`${run.stdout}${run.stderr}`)?.[1];
    results.push({ where, id: m.id, verdict, seconds, ...(broke ? { broke } : {}) });
    console.log(`${verdict.padEnd(9)} ${String(seconds).padStart(6)} s  ${where}${broke ? `  (${broke})` : ''}`);
  }
}
const out = join(root, 'reports', 'mutation', 'sim', 'timeouts-verified.json');
writeFileSync(out, `${JSON.stringify({ sandbox, limitS, results }, null, 2)}\n`);
const count = (v) => results.filter((r) => r.verdict.startsWith(v)).length;
console.log(
  `${results.length} timed-out mutant(s): ${count('Killed')} killed, ${count('Survived')} survived, ${count('Timeout')} real timeouts, ${count('not in')} not in this sandbox`,
);
