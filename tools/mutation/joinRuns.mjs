// Per-file figures of one jest-runner report, or of a before run joined with a run of new tests alone over the same
// mutants (docs/mutation.md, "After"): a mutant counts as detected when either report killed it or timed out on it
// (adding tests to a suite only adds kills); one without coverage before that a later run covered and did not detect is a
// survivor. Mutants are matched by file, place, mutator and replacement, not by id.
//
//   node tools/mutation/joinRuns.mjs <before mutation.json> [<new tests mutation.json> ...] [--survivors]
//
// Prints a Markdown table (mutants, invalid, static ignored, valid, killed, timeout, survived, no coverage, score,
// kills only) and, with --survivors, each mutant left (file:line:column, mutator, replacement).
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const showSurvivors = args.includes('--survivors');
const [before, ...others] = args.filter((a) => !a.startsWith('--'));
if (!before) {
  console.error('usage: node tools/mutation/joinRuns.mjs <before mutation.json> [<new tests mutation.json> ...] [--survivors]');
  process.exit(2);
}

const idOf = (file, m) =>
  `${file}:${m.location.start.line}:${m.location.start.column}:${m.location.end.line}:${m.location.end.column}:${m.mutatorName}:${m.replacement}`;
const DETECTED = new Set(['Killed', 'Timeout']);
const load = (path) => JSON.parse(readFileSync(path, 'utf8')).files;

/** The status a joined mutant ends with: the before run's, unless a later run killed it (or timed out on it). */
const joined = new Map();
for (const [file, { mutants }] of Object.entries(load(before))) for (const m of mutants) joined.set(idOf(file, m), { file, m, status: m.status });
for (const path of others)
  for (const [file, { mutants }] of Object.entries(load(path)))
    for (const m of mutants) {
      const entry = joined.get(idOf(file, m));
      if (entry && !DETECTED.has(entry.status) && DETECTED.has(m.status)) entry.status = m.status;
      // Covered by a later run and not detected: a survivor, not "no coverage" (PaymentsConsumer.ts:221, second pass).
      else if (entry && entry.status === 'NoCoverage' && m.status === 'Survived') entry.status = 'Survived';
    }

const rows = new Map();
for (const { file, status } of joined.values()) {
  const row = rows.get(file) ?? { mutants: 0, CompileError: 0, Ignored: 0, Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0 };
  row.mutants++;
  row[status] = (row[status] ?? 0) + 1;
  rows.set(file, row);
}
const pct = (n, d) => (d === 0 ? '-' : ((100 * n) / d).toFixed(1));
const line = (name, r) => {
  const valid = r.mutants - r.CompileError - r.Ignored;
  return `| ${name} | ${r.mutants} | ${r.CompileError} | ${r.Ignored} | ${valid} | ${r.Killed} | ${r.Timeout} | ${r.Survived} | ${r.NoCoverage} | ${pct(r.Killed + r.Timeout, valid)} | ${pct(r.Killed, valid)} |`;
};
console.log('| file | mutants | invalid | static (ignored) | valid | killed | timeout | survived | no cov. | score % | kills only % |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
const all = { mutants: 0, CompileError: 0, Ignored: 0, Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0 };
for (const [file, r] of [...rows].sort()) {
  console.log(line(file, r));
  for (const k of Object.keys(all)) all[k] += r[k] ?? 0;
}
console.log(line('**all**', all));
if (showSurvivors) {
  console.log();
  for (const { file, m, status } of joined.values())
    if (status === 'Survived' || status === 'NoCoverage')
      console.log(`${file}:${m.location.start.line}:${m.location.start.column} ${status} ${m.mutatorName}: ${JSON.stringify(m.replacement)}`);
}
