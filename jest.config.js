/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }] },
  // The worker provides @azure/functions-core; the local host (tools/local/host) stands in for it.
  moduleNameMapper: { '^@azure/functions-core$': '<rootDir>/tools/local/host/functionsCore.ts' },
  testTimeout: 60000,
  // Integration tests each start their own Azurite / Cosmos emulator on a free port.
  maxWorkers: 2,
};
