// StrykerJS with the jest runner over the payment-lifecycle files (docs/mutation.md): `npm run mutate`.
// Per-test coverage: each mutant runs only the tests that reach it, from the fast subset in tools/mutation/jest.config.js.
import { LIFECYCLE_FILES, SANDBOX_IGNORE } from './files.mjs';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'jest',
  jest: { projectType: 'custom', configFile: 'tools/mutation/jest.config.js', enableFindRelatedTests: true },
  coverageAnalysis: 'perTest',
  // A static mutant (one only module loading reaches, e.g. a constant) would run every related test file whole: minutes
  // each. Ignored here; the simulator runner tests them like any other (docs/mutation.md).
  ignoreStatic: true,
  checkers: ['typescript'],
  tsconfigFile: 'tools/mutation/tsconfig.checker.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: LIFECYCLE_FILES,
  ignorePatterns: SANDBOX_IGNORE,
  // The instrumented files of the core package need `// @ts-nocheck` too (the default covers src/, test/, lib/ only).
  disableTypeChecks: '{src,test,tools,packages/*/src,packages/*/test}/**/*.ts',
  // Two cores, shared: one test runner and the checker.
  concurrency: 1,
  timeoutMS: 10_000,
  reporters: ['html', 'json', 'progress', 'clear-text'],
  htmlReporter: { fileName: 'reports/mutation/jest/index.html' },
  jsonReporter: { fileName: 'reports/mutation/jest/mutation.json' },
  incremental: true,
  incrementalFile: 'reports/mutation/jest/stryker-incremental.json',
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
