/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }] },
  moduleNameMapper: {
    // The package's own public entry, as users import it (package.json `exports`), from the sources.
    '^azure-idempotent-consumer/core$': '<rootDir>/src/core/public.ts',
    // The worker provides @azure/functions-core; the local host (tools/local/host) stands in for it.
    '^@azure/functions-core$': '<rootDir>/tools/local/host/functionsCore.ts',
  },
  testTimeout: 60000,
  // Integration tests each start their own Azurite / Cosmos emulator on a free port.
  maxWorkers: 2,
};
