// The fixture files of test/integration/leftIntervals.test.ts run in name order, in one worker.
const Sequencer = require('@jest/test-sequencer').default;

module.exports = class AlphabeticalSequencer extends Sequencer {
  sort(tests) {
    return [...tests].sort((a, b) => a.path.localeCompare(b.path));
  }
};
