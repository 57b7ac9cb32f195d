// The jest runner over new tests alone (docs/mutation.md, "After"): what the test files named in MUTATE_NEW_TESTS
// (comma-separated, relative to the root) kill by themselves, over the files given with --mutate. Its own report
// (reports/mutation/jest-new/), no incremental result, its own sandbox folder; otherwise stryker.jest.config.mjs.
//
//   MUTATE_NEW_TESTS=test/unit/a.test.ts,test/unit/b.test.ts \
//     npx stryker run tools/mutation/stryker.newtests.config.mjs --mutate src/app/paymentRetry.ts
//
// MUTATE_STATIC=1 runs the static mutants too (the constants the jest runner otherwise leaves to the simulator): give
// only their lines with --mutate, since each one runs the new test files whole.
import base from './stryker.jest.config.mjs';

/** The report's folder: MUTATE_NEW_REPORT, default reports/mutation/jest-new (one per run when several run at once). */
const dir = process.env.MUTATE_NEW_REPORT ?? 'reports/mutation/jest-new';

if (!process.env.MUTATE_NEW_TESTS) throw new Error('MUTATE_NEW_TESTS must name the test files to run (comma-separated)');

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  ...base,
  htmlReporter: { fileName: `${dir}/index.html` },
  jsonReporter: { fileName: `${dir}/mutation.json` },
  incremental: false,
  ignoreStatic: process.env.MUTATE_STATIC !== '1',
  tempDirName: '.stryker-tmp/jest-new',
};
