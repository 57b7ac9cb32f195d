/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/packages/idempotency/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }] },
  moduleNameMapper: {
    // The core package (packages/idempotency) by its name and subpaths (its `exports`), from its sources.
    '^azure-functions-idempotency$': '<rootDir>/packages/idempotency/src/index.ts',
    '^azure-functions-idempotency/(table|cosmos|memory)$': '<rootDir>/packages/idempotency/src/stores/$1/index.ts',
    '^azure-functions-idempotency/operator$': '<rootDir>/packages/idempotency/src/operator/index.ts',
    '^azure-functions-idempotency/internal$': '<rootDir>/packages/idempotency/src/internal.ts',
    // The worker provides @azure/functions-core; the local host (tools/local/host) stands in for it.
    '^@azure/functions-core$': '<rootDir>/tools/local/host/functionsCore.ts',
  },
  // The core package's dist/ for the tests that compile the app against it (test/support/buildCorePackage.ts).
  globalSetup: '<rootDir>/test/support/buildCorePackage.ts',
  // The network rule as a guard: a socket to anything but loopback is refused at once and named (test/support/loopbackOnly.ts).
  // An interval a test file left running (an AAD CosmosClient's 5-minute endpoint refresh) is stopped when the next file
  // starts in that worker (test/support/leftIntervals.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/loopbackOnly.ts', '<rootDir>/test/support/leftIntervals.ts'],
  testTimeout: 60000,
  // Integration tests each start their own Azurite / Cosmos emulator on a free port.
  maxWorkers: 2,
};
