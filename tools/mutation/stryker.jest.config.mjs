// StrykerJS with the jest runner over the payment-lifecycle files (docs/mutation.md): `npm run mutate`.
// Per-test coverage: each mutant runs only the tests that reach it, from the fast subset in tools/mutation/jest.config.js.
import { LIFECYCLE_FILES, PARTS, SANDBOX_IGNORE, partOf, reportOptions } from './files.mjs';

const part = partOf();

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
  mutate: part ? PARTS[part] : LIFECYCLE_FILES,
  ignorePatterns: SANDBOX_IGNORE,
  // The instrumented files of the core package need `// @ts-nocheck` too (the default covers src/, test/, lib/ only).
  disableTypeChecks: '{src,test,tools,packages/*/src,packages/*/test}/**/*.ts',
  // Two cores, shared: one test runner beside the checker (Stryker adds a second runner once checking is done).
  concurrency: 1,
  timeoutMS: 10_000,
  ...reportOptions('jest', part),
  // One sandbox folder per runner, so that both can run at once.
  tempDirName: '.stryker-tmp/jest',
  cleanTempDir: 'always',
};
