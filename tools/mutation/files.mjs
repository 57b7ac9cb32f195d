// The payment-lifecycle files under mutation testing (docs/mutation.md). Both Stryker configurations
// (the jest runner: stryker.jest.config.mjs, the simulator: stryker.sim.config.mjs) mutate these.
export const LIFECYCLE_FILES = [
  'src/payments/**/*.ts',
  'src/app/durable*.ts',
  'src/app/payment*.ts',
  'src/app/ledgerCheckTimer.ts',
  'src/lifecycle/**/*.ts',
  'packages/idempotency/src/protocol/**/*.ts',
  'packages/idempotency/src/stores/table/**/*.ts',
];

/**
 * The same files in parts, for a long run taken one part at a time (`MUTATE_PART=protocol npm run mutate`): each part
 * writes its own report (reports/mutation/<runner>/parts/<part>/), so a run cut short keeps the parts it finished;
 * `npm run mutate:report` takes the newest report of each file.
 */
export const PARTS = {
  payments: ['src/payments/**/*.ts'],
  app: ['src/app/durable*.ts', 'src/app/payment*.ts', 'src/app/ledgerCheckTimer.ts'],
  lifecycle: ['src/lifecycle/**/*.ts'],
  protocol: ['packages/idempotency/src/protocol/**/*.ts'],
  table: ['packages/idempotency/src/stores/table/**/*.ts'],
};

/** The part named by MUTATE_PART (undefined: the whole set), or an error naming the parts. */
export function partOf(env = process.env) {
  const part = env.MUTATE_PART;
  if (!part) return undefined;
  if (!(part in PARTS)) throw new Error(`MUTATE_PART must be one of ${Object.keys(PARTS).join(', ')}, got ${part}`);
  return part;
}

/** Where a runner's reports go: reports/mutation/<runner>/ or, for a part, reports/mutation/<runner>/parts/<part>/. */
export function reportOptions(runner, part) {
  const dir = part ? `reports/mutation/${runner}/parts/${part}` : `reports/mutation/${runner}`;
  return {
    reporters: ['html', 'json', 'progress', 'clear-text'],
    htmlReporter: { fileName: `${dir}/index.html` },
    jsonReporter: { fileName: `${dir}/mutation.json` },
    incremental: true,
    incrementalFile: `${dir}/stryker-incremental.json`,
  };
}

/** What the sandbox does not need: build outputs (each run builds its own), reports, the .NET host's build. */
export const SANDBOX_IGNORE = [
  // Stryker's own sandboxes (the other runner's, when both run at once).
  '.stryker-tmp*',
  'dist',
  'packages/*/dist',
  'coverage',
  'reports',
  'test-results',
  '.sim-*',
  'tools/durable-host/bin',
  'tools/durable-host/obj',
  '.jest-results.json',
  '.jest-output.log',
];
