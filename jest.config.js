/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: false }] },
  testTimeout: 60000,
  // Integration tests each start their own Azurite / Cosmos emulator on a free port.
  maxWorkers: 2,
};
