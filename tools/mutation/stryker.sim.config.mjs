// StrykerJS with the command runner: the seeded simulator of the payments lifecycle (docs/simulation.md) judges each
// mutant with its invariants (`npm run mutate:sim`; docs/mutation.md). Mutation switching: the sandbox is instrumented
// and built once (tools/mutation/simSandbox.mjs), each mutant is one run of the compiled simulator with
// __STRYKER_ACTIVE_MUTANT__ set; it exits 1 when an invariant breaks (killed), 0 when all hold (survived).
import { PARTS, SANDBOX_IGNORE, partOf, reportOptions } from './files.mjs';

const part = partOf();

/** Seeds per mutant, after the directed scenarios and the regression seeds (main.ts runs those first). */
export const SIM_SEEDS = Number(process.env.MUTATE_SIM_SEEDS ?? 100);

/**
 * The lifecycle files whose code the simulator runs. It wires the in-memory store (the same rules: recordRules.ts), so
 * the Table store (packages/idempotency/src/stores/table) is the jest runner's only; and it loads neither the rewards'
 * markers, the timer's schedule, the dead-letter key parser nor the queue's settings (docs/mutation.md).
 */
export const SIM_FILES = [
  'src/payments/**/*.ts',
  'src/app/durable*.ts',
  'src/app/payment*.ts',
  '!src/app/paymentQueue.ts',
  'src/lifecycle/**/*.ts',
  '!src/lifecycle/{rewardMarkers,timerSchedule,deadLetterKeys,sweepMetrics}.ts',
  'packages/idempotency/src/protocol/**/*.ts',
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'command',
  commandRunner: { command: `node dist/tools/simulate/main.js --seeds ${SIM_SEEDS}` },
  buildCommand: 'node tools/mutation/simSandbox.mjs',
  symlinkNodeModules: false,
  coverageAnalysis: 'off',
  checkers: ['typescript'],
  tsconfigFile: 'tools/mutation/tsconfig.checker.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  // A part: its files the simulator runs (the Table store part has none).
  mutate: part ? [...PARTS[part], ...SIM_FILES.filter((f) => f.startsWith('!'))] : SIM_FILES,
  ignorePatterns: SANDBOX_IGNORE,
  disableTypeChecks: '{src,test,tools,packages/*/src,packages/*/test}/**/*.ts',
  concurrency: 1,
  // A run that takes longer than the dry run's time x 1.5 + this counts as a timeout (detected): generous, so that a
  // busy machine does not pass for a mutant that hangs the simulation.
  timeoutMS: 30_000,
  ...reportOptions('sim', part),
  // One sandbox folder per runner, so that both can run at once.
  tempDirName: '.stryker-tmp/sim',
  cleanTempDir: 'always',
};
