// The payment-lifecycle files under mutation testing (issue 50 item 4; docs/mutation.md). Both Stryker configurations
// (the jest runner: stryker.jest.config.mjs, the simulator: stryker.sim.config.mjs) mutate these.
export const LIFECYCLE_FILES = [
  'src/payments/**/*.ts',
  'src/app/durable*.ts',
  'src/app/payment*.ts',
  'src/lifecycle/**/*.ts',
  'packages/idempotency/src/protocol/**/*.ts',
  'packages/idempotency/src/stores/table/**/*.ts',
];

/** What the sandbox does not need: build outputs (each run builds its own), reports, the .NET host's build. */
export const SANDBOX_IGNORE = [
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
