/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }] },
  // The package's own public entry, as users import it (package.json `exports`), from the sources.
  moduleNameMapper: { '^azure-idempotent-consumer/core$': '<rootDir>/src/core/public.ts' },
  testTimeout: 60000,
  // Integration tests each start their own Azurite / Cosmos emulator on a free port.
  maxWorkers: 2,
};
