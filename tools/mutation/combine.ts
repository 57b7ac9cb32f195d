import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * `npm run mutate:report`: the two StrykerJS reports (the jest runner's, reports/mutation/jest/mutation.json, and the
 * simulator's, reports/mutation/sim/mutation.json; docs/mutation.md) joined per mutant. A mutant is the same in both
 * when its file, location, mutator and replacement are; it counts as detected when either runner killed it or timed
 * out on it. Writes reports/mutation/combined.md (the score per file for each runner and combined, then every mutant
 * neither runner detected) and reports/mutation/survivors.json, and prints the table.
 */

type Status = 'Killed' | 'Survived' | 'NoCoverage' | 'CompileError' | 'RuntimeError' | 'Timeout' | 'Ignored' | 'Pending';

interface Position {
  readonly line: number;
  readonly column: number;
}

interface Mutant {
  readonly id: string;
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly status: Status;
  readonly location: { readonly start: Position; readonly end: Position };
  readonly static?: boolean;
}

interface Report {
  readonly files: Record<string, { readonly source: string; readonly mutants: readonly Mutant[] }>;
}

/** Counts of one runner (or the combination) over a file, in Stryker's terms. */
interface Tally {
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  invalid: number;
}

const ROOT = join(__dirname, '..', '..', '..');
const REPORTS = join(ROOT, 'reports', 'mutation');

/**
 * A runner's report: its whole-set run (reports/mutation/<runner>/mutation.json) and its parts (parts/<part>/), the
 * newest report of each file winning. Undefined when there is none.
 */
function readReport(name: string): Report | undefined {
  const dir = join(REPORTS, name);
  const parts = existsSync(join(dir, 'parts')) ? readdirSync(join(dir, 'parts')).map((p) => join(dir, 'parts', p, 'mutation.json')) : [];
  const found = [join(dir, 'mutation.json'), ...parts].filter((f) => existsSync(f)).sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
  if (found.length === 0) return undefined;
  const files: Record<string, Report['files'][string]> = {};
  for (const file of found) Object.assign(files, (JSON.parse(readFileSync(file, 'utf8')) as Report).files);
  return { files };
}

function keyOf(file: string, m: Mutant): string {
  const { start, end } = m.location;
  return `${file}:${start.line}:${start.column}-${end.line}:${end.column}:${m.mutatorName}:${m.replacement ?? ''}`;
}

function emptyTally(): Tally {
  return { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, invalid: 0 };
}

function add(tally: Tally, status: Status): void {
  if (status === 'Killed') tally.killed++;
  else if (status === 'Timeout') tally.timeout++;
  else if (status === 'Survived') tally.survived++;
  else if (status === 'NoCoverage') tally.noCoverage++;
  else if (status === 'Ignored') tally.ignored++;
  else if (status === 'CompileError' || status === 'RuntimeError') tally.invalid++;
}

/** Stryker's mutation score: detected (killed, timeout) over valid (detected, survived, no coverage). */
function sum(t: Tally): number {
  return t.killed + t.timeout + t.survived + t.noCoverage + t.ignored + t.invalid;
}

function score(t: Tally): string {
  const valid = t.killed + t.timeout + t.survived + t.noCoverage;
  return valid === 0 ? 'n/a' : ((100 * (t.killed + t.timeout)) / valid).toFixed(1);
}

const detected = (s: Status | undefined): s is 'Killed' | 'Timeout' => s === 'Killed' || s === 'Timeout';

/** The combined status: detected by either, else what is left (a survivor of what ran it). */
function combinedStatus(jest: Status | undefined, sim: Status | undefined): Status {
  if (jest === 'CompileError' || sim === 'CompileError') return 'CompileError';
  if (detected(jest)) return jest;
  if (detected(sim)) return sim;
  if (sim === 'Survived' || jest === 'Survived') return 'Survived';
  if (jest === 'NoCoverage') return 'NoCoverage';
  return jest ?? sim ?? 'Pending';
}

/** The mutated text, on one line, shortened. */
function original(source: string, m: Mutant): string {
  const lines = source.split('\n');
  const { start, end } = m.location;
  const text = start.line === end.line ? lines[start.line - 1].slice(start.column - 1, end.column - 1) : `${lines[start.line - 1].slice(start.column - 1)} ...`;
  return oneLine(text);
}

function oneLine(text: string | undefined, max = 90): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return (flat.length > max ? `${flat.slice(0, max - 3)}...` : flat).replace(/\|/g, '\\|').replace(/`/g, "'");
}

function row(cells: readonly (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

function tallyCells(t: Tally | undefined): (string | number)[] {
  if (!t) return ['not run', '', '', '', ''];
  return [score(t), t.killed + t.timeout, t.survived, t.noCoverage, t.ignored];
}

function main(): void {
  const jest = readReport('jest');
  const sim = readReport('sim');
  if (!jest && !sim) {
    console.error('no report: run npm run mutate and/or npm run mutate:sim first');
    process.exitCode = 1;
    return;
  }
  const simStatus = new Map<string, Status>();
  for (const [file, data] of Object.entries(sim?.files ?? {})) for (const m of data.mutants) simStatus.set(keyOf(file, m), m.status);

  const files = [...new Set([...Object.keys(jest?.files ?? {}), ...Object.keys(sim?.files ?? {})])].sort();
  const perFile: string[] = [];
  const totals = { jest: emptyTally(), sim: emptyTally(), combined: emptyTally() };
  const survivors: Array<{ file: string; line: number; column: number; mutator: string; original: string; replacement: string; jest: string; sim: string }> =
    [];
  for (const file of files) {
    const source = jest?.files[file]?.source ?? sim!.files[file].source;
    const jestMutants = jest?.files[file]?.mutants ?? [];
    const byKey = new Map<string, { mutant: Mutant; jest?: Status; sim?: Status }>();
    for (const m of jestMutants) byKey.set(keyOf(file, m), { mutant: m, jest: m.status });
    for (const m of sim?.files[file]?.mutants ?? []) {
      const key = keyOf(file, m);
      byKey.set(key, { mutant: byKey.get(key)?.mutant ?? m, jest: byKey.get(key)?.jest, sim: m.status });
    }
    const t = { jest: jest?.files[file] ? emptyTally() : undefined, sim: sim?.files[file] ? emptyTally() : undefined, combined: emptyTally() };
    for (const { mutant, jest: j, sim: s } of byKey.values()) {
      if (j && t.jest) add(t.jest, j);
      if (s && t.sim) add(t.sim, s);
      if (j) add(totals.jest, j);
      if (s) add(totals.sim, s);
      const c = combinedStatus(j, s);
      add(t.combined, c);
      add(totals.combined, c);
      if (c === 'Survived' || c === 'NoCoverage' || c === 'Ignored') {
        survivors.push({
          file,
          line: mutant.location.start.line,
          column: mutant.location.start.column,
          mutator: mutant.mutatorName,
          original: original(source, mutant),
          replacement: oneLine(mutant.replacement),
          jest: j ?? 'not run',
          sim: s ?? 'not run',
        });
      }
    }
    const simRan = t.sim && simStatus.size > 0 ? t.sim : undefined;
    perFile.push(
      row([file, byKey.size, t.combined.invalid, ...tallyCells(t.jest), ...tallyCells(simRan), score(t.combined), t.combined.survived + t.combined.noCoverage]),
    );
  }
  const header = [
    row([
      'file',
      'mutants',
      'type errors',
      'jest score',
      'killed',
      'survived',
      'no cov.',
      'static',
      'sim score',
      'killed',
      'survived',
      'no cov.',
      '-',
      'combined score',
      'left',
    ]),
    row(Array.from({ length: 15 }, () => '---')),
  ];
  const total = row([
    '**all**',
    sum(totals.combined),
    totals.combined.invalid,
    ...tallyCells(jest ? totals.jest : undefined),
    ...tallyCells(sim ? totals.sim : undefined),
    score(totals.combined),
    totals.combined.survived + totals.combined.noCoverage,
  ]);
  const table = [...header, ...perFile, total].join('\n');
  survivors.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
  const list = [
    row(['file:line:col', 'mutator', 'original', 'replacement', 'jest', 'sim']),
    row(['---', '---', '---', '---', '---', '---']),
    ...survivors.map((s) => row([`${s.file}:${s.line}:${s.column}`, s.mutator, `\`${s.original}\``, `\`${s.replacement}\``, s.jest, s.sim])),
  ].join('\n');
  mkdirSync(REPORTS, { recursive: true });
  const out = join(REPORTS, 'combined.md');
  writeFileSync(out, `# Mutation scores, combined\n\n${table}\n\n## Detected by neither (${survivors.length})\n\n${list}\n`);
  writeFileSync(join(REPORTS, 'survivors.json'), `${JSON.stringify(survivors, null, 2)}\n`);
  console.log(table);
  console.log(`\n${survivors.length} mutant(s) detected by neither runner; written to ${out.replace(`${dirname(REPORTS)}/`, 'reports/')}`);
}

main();
