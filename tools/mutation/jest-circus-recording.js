// Jest's own test runner (jest-circus), recording each test file's test names under Stryker's dry run (testIndex.js).
const circus = require('jest-circus/runner').default;
const { record, underStryker } = require('./testIndex');

module.exports = async function recordingRunner(globalConfig, config, environment, runtime, testPath, sendMessageToJest) {
  const result = await circus(globalConfig, config, environment, runtime, testPath, sendMessageToJest);
  if (underStryker(config) && !globalConfig.testNamePattern) {
    record(
      config.rootDir,
      testPath,
      result.testResults.map((t) => t.fullName),
    );
  }
  return result;
};
