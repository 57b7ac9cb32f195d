// Applies one mutant by hand (a text replacement that must occur exactly once), runs the given jest files, restores the
// file, and prints KILLED or SURVIVED with jest's test line (docs/mutation-pass4.md: how each survivor's kill was checked).
// A mutant that does not compile looks killed to ts-jest: write a form of it that compiles (`{ abortSignal: void abortSignal }`).
//
//   node tools/mutation/handMutant.mjs <file> <old text> <new text> <test file>...
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const [file, before, after, ...tests] = process.argv.slice(2);
if (!file || before === undefined || after === undefined || tests.length === 0) {
  console.error('usage: node tools/mutation/handMutant.mjs <file> <old text> <new text> <test file>...');
  process.exit(2);
}
const source = readFileSync(file, 'utf8');
const count = source.split(before).length - 1;
if (count !== 1) {
  console.error(`${file}: the text to replace occurs ${count} times, not once`);
  process.exit(2);
}
writeFileSync(
  file,
  source.replace(before, () => after),
);
try {
  const run = spawnSync('npx', ['jest', '--silent', ...tests], { env: { ...process.env, CI: 'true' }, encoding: 'utf8' });
  const line =
    (run.stderr ?? '')
      .split('\n')
      .filter((l) => l.startsWith('Tests:'))
      .pop() ?? 'no test ran: does the mutant compile?';
  console.log(`${run.status === 0 ? 'SURVIVED' : 'KILLED  '} ${file}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}  [${line}]`);
} finally {
  writeFileSync(file, source);
}
