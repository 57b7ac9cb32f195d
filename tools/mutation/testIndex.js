// Which test file holds which tests, for StrykerJS's jest runner (docs/mutation.md). Stryker runs a mutant with
// --findRelatedTests on the mutated file and a --testNamePattern of the tests that cover it; Jest then still loads
// every related test file to find out its tests are skipped: for a file of the core package that is most of the
// subset, tens of seconds per mutant. The runner (jest-circus-recording.js) writes each file's test names during Stryker's
// dry run (the one run without a pattern) to the sandbox; the sequencer (coveringSequencer.js) keeps only the files
// with a test the pattern matches, by the rule Jest itself applies (the test's full name, case-insensitive).
const { appendFileSync, existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const INDEX_FILE = '.stryker-test-index.jsonl';

/** Stryker puts its namespace in the globals of the configuration it runs Jest with; elsewhere nothing is recorded. */
function underStryker(projectConfig) {
  return Boolean(projectConfig.globals && projectConfig.globals.__strykerGlobalNamespace__);
}

function record(rootDir, testPath, names) {
  appendFileSync(join(rootDir, INDEX_FILE), `${JSON.stringify({ testPath, names })}\n`);
}

/** testPath -> full names, or undefined when nothing was recorded (not under Stryker, or before its dry run). */
function readIndex(rootDir) {
  const file = join(rootDir, INDEX_FILE);
  if (!existsSync(file)) return undefined;
  const index = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const { testPath, names } = JSON.parse(line);
    index.set(testPath, [...(index.get(testPath) ?? []), ...names]);
  }
  return index;
}

module.exports = { underStryker, record, readIndex };
