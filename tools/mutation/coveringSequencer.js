// Jest's default order, keeping only the test files that hold a test the --testNamePattern matches (testIndex.js).
// A file the index does not know is kept; without a pattern (a whole run) every file is.
const Sequencer = require('@jest/test-sequencer').default;
const { readIndex } = require('./testIndex');

class CoveringSequencer extends Sequencer {
  constructor(options) {
    super(options);
    this.globalConfig = options && options.globalConfig;
  }

  async sort(tests) {
    const sorted = await super.sort(tests);
    const pattern = this.globalConfig && this.globalConfig.testNamePattern;
    if (!pattern) return sorted;
    const index = readIndex(this.globalConfig.rootDir);
    if (!index) return sorted;
    const matches = new RegExp(pattern, 'i');
    return sorted.filter((test) => {
      const names = index.get(test.path);
      return names === undefined || names.some((name) => matches.test(name));
    });
  }
}

module.exports = CoveringSequencer;
